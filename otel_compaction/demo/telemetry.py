"""Where the demo's telemetry goes: OTLP/JSON files, memory, and optionally a Collector.

- spans: ``traces.jsonl`` through :class:`OtlpJsonFileExporter` (the Collector
  file exporter's format, which ``otel-compaction analyze`` reads back);
- metrics: an ``InMemoryMetricReader``, written at the end to ``metrics.json``
  as one OTLP/JSON ``ExportMetricsServiceRequest``;
- with ``--otlp-endpoint``, the same spans and metrics also go to a Collector
  over OTLP: HTTP/protobuf (``/v1/traces``, ``/v1/metrics`` under the URL),
  gRPC when the URL's scheme is ``grpc`` or its port is 4317.

:class:`AgentLedger` remembers which conversation ids each agent's spans
carried, so the verdicts can name the conversation of every agent even when
the instrumentation inferred it.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from otel_compaction import semconv as sc
from otel_compaction.otlp.decode import encode_json
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter

TRACES_FILE = "traces.jsonl"
METRICS_FILE = "metrics.json"
SERVICE = "demo-agent"
"""``service.name`` of the demo's telemetry (the one docs/quickstart-stack.md searches)."""
GRPC_PORT = 4317
EXPORT_TIMEOUT_SECONDS = 5.0
METRIC_INTERVAL_MS = 60_000
"""The Collector gets the metrics at shutdown; the run is shorter than one interval."""


class AgentLedger(SpanProcessor):
    """Collects the conversation ids of the spans of each trace (one trace per agent)."""

    def __init__(self) -> None:
        self._by_trace: defaultdict[int, set[str]] = defaultdict(set)
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Note the span's conversation under its trace."""
        cid = (span.attributes or {}).get(sc.CONVERSATION_ID)
        if isinstance(cid, str) and span.context is not None:
            with self._lock:
                self._by_trace[span.context.trace_id].add(cid)

    def conversations(self, trace_id: int) -> tuple[str, ...]:
        """The conversation ids seen in the trace, sorted."""
        with self._lock:
            return tuple(sorted(self._by_trace.get(trace_id, ())))

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered."""
        return True


def otlp_exporters(endpoint: str) -> tuple[SpanExporter, MetricExporter]:
    """OTLP span and metric exporters for ``endpoint``: gRPC for ``grpc://`` or port 4317.

    Raises:
        ValueError: the URL has no host.
    """
    url = urlsplit(endpoint)
    if not url.hostname:
        raise ValueError(f"not an OTLP endpoint URL: {endpoint!r}")
    if url.scheme == "grpc" or url.port == GRPC_PORT:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        insecure = url.scheme in ("grpc", "http")
        target = f"{'http' if insecure else 'https'}://{url.netloc}"
        return (
            GrpcSpanExporter(endpoint=target, insecure=insecure, timeout=EXPORT_TIMEOUT_SECONDS),
            GrpcMetricExporter(endpoint=target, insecure=insecure, timeout=EXPORT_TIMEOUT_SECONDS),
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = endpoint.rstrip("/")
    for suffix in ("/v1/traces", "/v1/metrics"):
        base = base.removesuffix(suffix)
    return (
        OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=EXPORT_TIMEOUT_SECONDS),
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=EXPORT_TIMEOUT_SECONDS),
    )


class DemoTelemetry:
    """The demo's tracer and meter providers and their exporters.

    Args:
        out_dir: where ``traces.jsonl`` and ``metrics.json`` are written.
        otlp_endpoint: also send everything to this OTLP endpoint (a Collector).
    """

    def __init__(self, out_dir: Path, otlp_endpoint: str | None = None) -> None:
        resource = Resource.create({SERVICE_NAME: SERVICE})
        self.traces_path = out_dir / TRACES_FILE
        self.metrics_path = out_dir / METRICS_FILE
        self.file_exporter = OtlpJsonFileExporter(self.traces_path)
        self.ledger = AgentLedger()
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(self.ledger)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(self.file_exporter))
        self.metric_reader = InMemoryMetricReader()
        readers: list[MetricReader] = [self.metric_reader]
        if otlp_endpoint:
            span_exporter, metric_exporter = otlp_exporters(otlp_endpoint)
            self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            readers.append(
                PeriodicExportingMetricReader(
                    metric_exporter, export_interval_millis=METRIC_INTERVAL_MS
                )
            )
        self.meter_provider = MeterProvider(metric_readers=readers, resource=resource)
        self.tracer: Tracer = self.tracer_provider.get_tracer(
            "otel_compaction.demo", schema_url=sc.SCHEMA_URL
        )

    def flush(self) -> MetricsData | None:
        """Write every span to ``traces.jsonl`` and the metrics so far to ``metrics.json``."""
        self.tracer_provider.force_flush()
        data = self.metric_reader.get_metrics_data()
        if data is not None:
            document = encode_json(encode_metrics(data))
            self.metrics_path.write_text(
                json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8"
            )
        return data

    def shutdown(self) -> None:
        """Flush and close everything (the Collector gets its last batch here)."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def counter_values(data: MetricsData | None, name: str, key: str) -> Mapping[str, float]:
    """A counter's value per value of attribute ``key`` (summed over other attributes)."""
    values: dict[str, float] = {}
    if data is None:
        return values
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    label = str((point.attributes or {}).get(key, ""))
                    values[label] = values.get(label, 0.0) + float(getattr(point, "value", 0))
    return values
