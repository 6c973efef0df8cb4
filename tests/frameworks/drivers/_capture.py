"""What the framework drivers share: the instrumentation on or off, spans written as JSON.

A driver runs in a framework's own environment (``tests/frameworks/venvs.py``) with
the checkout on ``PYTHONPATH``; it prints one JSON document on stdout: the host's
results (what the agent returned, the requests the scripted server answered) and,
with the instrumentation on, every finished span (name, attributes, parent).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as JSON: name, attributes, its id and its parent's."""
    context = span.get_span_context()
    return {
        "name": span.name,
        "span_id": f"{context.span_id:016x}" if context else None,
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
    }


class Capture:
    """The spans and findings of an instrumented run."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.findings: list[dict[str, Any]] = []

    def on_finding(self, finding: Any) -> None:
        """Keep a finding's kind, conversation and turn."""
        self.findings.append(
            {
                "kind": str(getattr(finding.kind, "value", finding.kind)),
                "reason": finding.reason,
                "conversation_id": getattr(finding, "conversation_id", None),
                "turn": getattr(finding, "turn", None),
            }
        )


@contextmanager
def instrumented(on: bool) -> Iterator[Capture | None]:
    """``CompactionInstrumentor`` on in-memory providers while the block runs (or nothing)."""
    if not on:
        yield None
        return
    from opentelemetry import trace

    from otel_compaction import CompactionInstrumentor

    capture = Capture()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(capture.exporter))
    trace.set_tracer_provider(provider)
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    instrumentor = CompactionInstrumentor()
    instrumentor.instrument(
        tracer_provider=provider, meter_provider=meters, on_finding=capture.on_finding
    )
    try:
        yield capture
    finally:
        instrumentor.uninstrument()


def requests(api: Any, summarizer: Any) -> list[dict[str, Any]]:
    """What the scripted server answered, request by request: its API, whether it was a
    summarizer's (``summarizer(request)``), and a digest of its body (the host's side)."""
    return [
        {
            "api": r.api,
            "summarizer": bool(summarizer(r)),
            "body": hashlib.sha256(json.dumps(r.body, sort_keys=True).encode()).hexdigest(),
        }
        for r in api.requests
    ]


def emit(result: dict[str, Any], capture: Capture | None) -> None:
    """Print the run's result, with the spans and findings when instrumented."""
    if capture is not None:
        result["spans"] = [span_record(s) for s in capture.exporter.get_finished_spans()]
        result["findings"] = capture.findings
    json.dump(result, sys.stdout, sort_keys=True, default=str)
