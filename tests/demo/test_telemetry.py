"""Where the demo's telemetry goes: the OTLP exporter for a URL, and a Collector getting it all."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_compaction import semconv as sc
from otel_compaction.demo import SCENARIOS, DemoError, run_demo
from otel_compaction.demo.telemetry import SERVICE, otlp_exporters
from tests.demo import spans


@pytest.mark.parametrize(
    ("url", "grpc"),
    [
        ("grpc://localhost:4317", True),
        ("http://localhost:4317", True),
        ("grpc://collector:9999", True),
        ("http://localhost:4318", False),
        ("https://collector.example/otlp", False),
    ],
)
def test_grpc_for_its_scheme_or_port_4317_else_http(url: str, grpc: bool) -> None:
    """gRPC when the scheme is grpc or the port 4317; HTTP/protobuf otherwise."""
    span_exporter, _ = otlp_exporters(url)
    assert isinstance(span_exporter, GrpcSpanExporter if grpc else HttpSpanExporter)
    span_exporter.shutdown()


@pytest.mark.parametrize("suffix", ["", "/", "/v1/traces", "/v1/metrics/"])
def test_http_paths_are_the_otlp_ones_under_the_url(suffix: str) -> None:
    """The HTTP exporters post to /v1/traces and /v1/metrics under the URL's base."""
    with _collector() as (url, received):
        span_exporter, metric_exporter = otlp_exporters(url + suffix)
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
        tracer_provider.get_tracer("probe").start_span("probe").end()
        tracer_provider.shutdown()
        # One export, at shutdown.
        reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=3_600_000)
        meter_provider = MeterProvider(metric_readers=[reader])
        meter_provider.get_meter("probe").create_counter("probe").add(1)
        meter_provider.shutdown()
    assert {path: len(bodies) for path, bodies in received.items()} == {
        "/v1/traces": 1,
        "/v1/metrics": 1,
    }


def test_an_endpoint_without_a_host_is_refused(tmp_path: Path) -> None:
    """A malformed --otlp-endpoint stops the demo with a message, before any agent runs."""
    with pytest.raises(DemoError, match="not an OTLP endpoint"):
        run_demo(tmp_path, (), otlp_endpoint="localhost")


@contextlib.contextmanager
def _collector() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    """A stand-in Collector on 127.0.0.1: records the body of every OTLP/HTTP POST by path."""
    received: dict[str, list[bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            received.setdefault(self.path, []).append(body)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.slow
def test_otlp_endpoint_gets_the_same_spans_and_the_metrics(tmp_path: Path) -> None:
    """--otlp-endpoint: the Collector receives every span of traces.jsonl, and the metrics."""
    scenario = next(s for s in SCENARIOS if s.name == "note000-turn30")
    with _collector() as (url, received):
        result = run_demo(tmp_path, (scenario,), otlp_endpoint=url)
    assert result.ok
    sent = [
        span
        for body in received["/v1/traces"]
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    in_file = list(spans(tmp_path / "traces.jsonl"))
    assert sorted(s.span_id.hex() for s in sent) == sorted(s["spanId"] for s in in_file)
    metrics = ExportMetricsServiceRequest.FromString(received["/v1/metrics"][-1])
    (resource,) = metrics.resource_metrics
    service = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert service["service.name"] == SERVICE
    names = {m.name for sm in resource.scope_metrics for m in sm.metrics}
    assert sc.METRIC_FINDINGS.name in names
