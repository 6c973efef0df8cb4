"""Test helpers: capture spans, metrics and findings in memory.

For users testing their own agents and for our own tests::

    from otel_compaction.testing import capture_telemetry

    with capture_telemetry() as cap:
        CompactionInstrumentor().instrument(
            tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider
        )
        run_agent()
    assert not cap.spans_named("compaction")[0].attributes.get("compaction.flag.livelock")
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction.model import Finding

__all__ = ["Capture", "capture_telemetry"]


@dataclass
class Capture:
    """What a ``capture_telemetry()`` block recorded, with lookup helpers."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    span_exporter: InMemorySpanExporter
    metric_reader: InMemoryMetricReader
    findings: list[Finding] = field(default_factory=list)

    def on_finding(self, finding: Finding) -> None:
        """A finding callback that keeps every finding in ``findings``."""
        self.findings.append(finding)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """All finished spans, in the order they ended."""
        return tuple(self.span_exporter.get_finished_spans())

    def spans_named(self, name: str) -> list[ReadableSpan]:
        """Finished spans with exactly this name."""
        return [s for s in self.spans if s.name == name]

    def metric_points(self, name: str) -> list[Any]:
        """Data points of the metric ``name`` at a fresh collection (empty if absent)."""
        data = self.metric_reader.get_metrics_data()
        points: list[Any] = []
        if data is None:
            return points
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points

    def counter_total(self, name: str, attributes: Mapping[str, str] | None = None) -> float:
        """Sum of a counter's points whose attributes include all of ``attributes``."""
        wanted = dict(attributes or {})
        total = 0.0
        for point in self.metric_points(name):
            attrs = dict(point.attributes or {})
            if all(attrs.get(key) == value for key, value in wanted.items()):
                total += point.value
        return total


@contextmanager
def capture_telemetry() -> Iterator[Capture]:
    """Fresh tracer and meter providers with in-memory exporters, shut down on exit."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    capture = Capture(tracer_provider, meter_provider, exporter, reader)
    try:
        yield capture
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
