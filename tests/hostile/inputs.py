"""Shared helpers of the hostile-input suite: its hostile inputs, built once."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction import semconv as sc
from otel_compaction.otlp.attributes import key_values


def trace_request(*spans: tuple[str, dict[str, Any]], seed: int = 1) -> ExportTraceServiceRequest:
    """A request holding one span per ``(name, attributes)``, with fixed ids and times."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n, (name, attributes) in enumerate(spans, start=1):
        span = scope.spans.add(
            name=name,
            trace_id=bytes([seed]) * 16,
            span_id=bytes([seed, n]) * 4,
            start_time_unix_nano=1_794_528_000_000_000_000 + n,
            end_time_unix_nano=1_794_528_000_000_000_000 + n + 1,
        )
        span.attributes.extend(key_values(attributes))
    return request


def langchain_compaction(
    tokens_before: Any, conversation: str = "hostile-1"
) -> tuple[str, dict[str, Any]]:
    """A foreign ``compaction`` span (no ``compaction.id``) with a bad size."""
    return (
        sc.SPAN_COMPACTION,
        {
            sc.CONVERSATION_ID: conversation,
            sc.COMPACTION_SOURCE: "langchain",
            sc.TOKENS_BEFORE: tokens_before,
        },
    )


def turn(conversation: str, index: int, tokens: int) -> tuple[str, dict[str, Any]]:
    """An inference span of ours for turn ``index``."""
    return (
        "chat claude-sonnet-4-5",
        {
            sc.CONVERSATION_ID: conversation,
            sc.TURN_INDEX: index,
            sc.CONTEXT_TOKENS: tokens,
            sc.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-5",
        },
    )


def counter(exposition: bytes, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` in a Prometheus exposition whose labels match."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(exposition.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total
