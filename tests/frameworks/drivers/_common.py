"""What every driver shares: telemetry set up in memory, the instrumentation switch, the
report written as JSON (spans as they were exported, the host's results, our error count).

A driver runs under a framework's own interpreter with the checkout on ``PYTHONPATH``;
its one argument is a JSON object of options, and it prints one JSON report on stdout's
last line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction import CompactionInstrumentor


def options() -> dict[str, Any]:
    """The driver's options (its one command-line argument)."""
    return dict(json.loads(sys.argv[1])) if len(sys.argv) > 1 else {}


class Telemetry:
    """In-memory spans and metrics; the instrumentation on when ``instrument`` is true."""

    def __init__(self, instrument: bool) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.instrumentor = CompactionInstrumentor()
        self.instrumented = instrument
        if instrument:
            self.instrumentor.instrument(
                tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
            )

    def errors(self) -> int:
        """Internal errors the instrumentation swallowed."""
        runtime = self.instrumentor.runtime
        return runtime.guard.errors if runtime is not None else 0

    def spans(self) -> list[dict[str, Any]]:
        """Every finished span, in export order, as plain JSON."""
        self.tracer_provider.force_flush()
        return [_span(s) for s in self.exporter.get_finished_spans()]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _span(span: ReadableSpan) -> dict[str, Any]:
    parent = span.parent
    attributes: Mapping[str, Any] = span.attributes or {}
    return {
        "name": span.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "span_id": format(span.context.span_id, "016x"),
        "parent_id": format(parent.span_id, "016x") if parent is not None else None,
        "start": span.start_time,
        "attributes": {k: _plain(v) for k, v in attributes.items()},
        "status": span.status.status_code.name,
    }


def report(**fields: Any) -> None:
    """Print the report as the last line of stdout."""
    print(json.dumps(fields, sort_keys=True, default=str))
