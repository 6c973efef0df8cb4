"""Golden-file helpers: OTLP/JSON lines in, normalized findings and spans out.

Like the Collector's ``golden`` package: outputs are compared after removing
what legitimately varies (timestamps) and sorting what has no order (spans,
attributes, findings).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from otel_compaction.otlp.decode import Signal, encode_json, parse_json

TESTDATA = Path(__file__).parent / "testdata"
_TIME_KEYS = frozenset(
    {"startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano"}
)

__all__ = ["TESTDATA", "changed_items", "normalize_requests", "read_requests", "spans_to_lines"]


def spans_to_lines(spans: list[ReadableSpan], batch: int = 8) -> list[str]:
    """Spans as OTLP/JSON lines, ``batch`` spans per ``ExportTraceServiceRequest``."""
    return [
        json.dumps(encode_json(encode_spans(spans[i : i + batch])), sort_keys=True)
        for i in range(0, len(spans), batch)
    ]


def read_requests(path: Path) -> Iterator[tuple[Signal, Any]]:
    """The requests of a ``*.traces.jsonl`` or ``*.logs.jsonl`` file (or of a capture of log
    requests, whose lines start with ``resourceLogs``), in order."""
    text = path.read_text(encoding="utf-8")
    logs = path.name.endswith(".logs.jsonl") or text.lstrip().startswith('{"resourceLogs"')
    signal = Signal.LOGS if logs else Signal.TRACES
    for line in text.splitlines():
        if line.strip():
            yield signal, parse_json(signal, line.encode())


def changed_items(before: Iterable[Any], after: Iterable[Any]) -> list[dict[str, Any]]:
    """The spans or log records ``after`` changed; fails if any was lost or added."""
    old = {_key(d): d for d in normalize_requests(before, keep_time=True)}
    new = {_key(d): d for d in normalize_requests(after, keep_time=True)}
    assert old.keys() == new.keys(), "the processor lost or added items"
    changed = [_strip_time(new[k]) for k in new if new[k] != old[k]]
    return sorted(changed, key=lambda d: json.dumps(d, sort_keys=True))


def _key(item: dict[str, Any]) -> tuple[str, str, str]:
    return (item.get("traceId", ""), item.get("spanId", ""), str(item.get("timeUnixNano", "")))


def _strip_time(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in _TIME_KEYS}


def normalize_requests(requests: Iterable[Any], keep_time: bool = False) -> list[dict[str, Any]]:
    """Every span or log record of ``requests``, without timestamps, in a stable order."""
    out = []
    for request in requests:
        doc = encode_json(request)
        for resource in doc.get("resourceSpans", []) + doc.get("resourceLogs", []):
            resource_attrs = _attrs(resource.get("resource", {}).get("attributes", []))
            for scope in resource.get("scopeSpans", []) + resource.get("scopeLogs", []):
                for item in scope.get("spans", []) + scope.get("logRecords", []):
                    name = scope.get("scope", {}).get("name", "")
                    out.append(
                        {"resource": resource_attrs, "scope": name, **_item(item, keep_time)}
                    )
    return sorted(out, key=lambda d: json.dumps(d, sort_keys=True))


def _item(item: dict[str, Any], keep_time: bool) -> dict[str, Any]:
    clean = dict(item) if keep_time else _strip_time(item)
    if "attributes" in clean:
        clean["attributes"] = _attrs(clean["attributes"])
    return clean


def _attrs(attributes: list[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: kv.get("value", {}) for kv in sorted(attributes, key=lambda kv: kv["key"])}
