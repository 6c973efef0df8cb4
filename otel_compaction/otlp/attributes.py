"""Writing attributes onto OTLP spans and log records (the protobuf side of the emit layer)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.util.types import AttributeValue

from otel_compaction.otlp.values import INT64_MAX, INT64_MIN


def any_value(value: object) -> AnyValue:
    """An OTLP ``AnyValue`` from an OTel attribute value (ints clamped to int64)."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        # Clamped to int64: protobuf refuses a bigger int (and raises in the pipeline).
        return AnyValue(int_value=min(max(value, INT64_MIN), INT64_MAX))
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    out = AnyValue()
    if isinstance(value, list | tuple):
        out.array_value.values.extend(any_value(v) for v in value)
    return out


def key_values(attributes: Mapping[str, AttributeValue]) -> list[KeyValue]:
    """OTLP ``KeyValue``s from an attribute dictionary."""
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]


def replace_attributes(
    target: Any, attributes: Mapping[str, AttributeValue], remove: Iterable[str] = ()
) -> bool:
    """Set ``attributes`` on a span or log record, first removing keys in ``remove``.

    Keys being set are removed too, so no key appears twice. Returns whether
    anything changed (something removed or set).
    """
    added = key_values(attributes)  # built first: a failure leaves the target as it was
    drop = set(remove) | set(attributes)
    kept = [kv for kv in target.attributes if kv.key not in drop]
    removed = len(kept) != len(target.attributes)
    if removed:
        del target.attributes[:]
        target.attributes.extend(kept)
    target.attributes.extend(added)
    return removed or bool(attributes)
