"""A 25 MB batch with captured content is taken; a refusal is logged once."""

from __future__ import annotations

import http.client
import logging
import socket
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction import semconv as sc
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.config import ForwardConfig, ReceiversConfig
from otel_compaction.processor.forward import GrpcSender, Outcome
from tests.hostile.inputs import counter, trace_request, turn
from tests.processor.service_util import running, wait_for

pytestmark = pytest.mark.slow

COLLECTOR_HTTP_DEFAULT = 20 * 1024 * 1024  # confighttp's defaultMaxRequestBodySize
COLLECTOR_GRPC_DEFAULT = 4 * 1024 * 1024  # grpc-go's default receive limit (configgrpc unset)


def _content_batch(spans: int, ours: int, message_bytes: int) -> list[ReadableSpan]:
    """What OpenLLMetry beside our instrumentation exported at exit: inference spans carrying
    ``gen_ai.input.messages``, ``ours`` of them with our turn attributes."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    text = '[{"role": "user", "parts": [{"type": "text", "content": "%s"}]}]' % (
        "x" * message_bytes
    )
    for n in range(1, spans + 1):
        with tracer.start_as_current_span("chat claude-sonnet-4-5") as span:
            span.set_attribute("gen_ai.input.messages", text)
            if n <= ours:
                span.set_attribute(sc.CONVERSATION_ID, "big-batch")
                span.set_attribute(sc.TURN_INDEX, n)
                span.set_attribute(sc.CONTEXT_TOKENS, 1000 + n)
                span.set_attribute(sc.GEN_AI_REQUEST_MODEL, "claude-sonnet-4-5")
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_the_default_limit_is_no_lower_than_the_collectors_own() -> None:
    """``receivers.max_request_bytes`` defaults to at least the Collector's OTLP limits."""
    limit = ReceiversConfig().max_request_bytes
    assert limit >= max(COLLECTOR_HTTP_DEFAULT, COLLECTOR_GRPC_DEFAULT)


def test_a_25_mb_batch_of_captured_content_is_accepted_and_its_turns_applied(
    tmp_path: Path,
) -> None:
    """The issue's batch (232 spans, 25 MB of ``gen_ai.input.messages``) exported by the real
    SDK is answered 200 and each of our 120 turns reaches the engine."""
    spans = _content_batch(232, 120, 108_000)
    with running(tmp_path) as (service, _):
        assert service.http is not None
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces",
                                timeout=60)  # fmt: skip
        result = exporter.export(spans)
        # The engine applies turns after the 200 answer: wait for all 120, not the first.
        fraction = "compaction_pressure_token_fraction_count"
        applied = wait_for(lambda: counter(service.metrics.exposition(), fraction) == 120, 60)
        text = service.metrics.exposition()
    assert result is SpanExportResult.SUCCESS
    assert applied
    assert len(service.pipeline.state.registry) == 1
    assert counter(text, "compaction_processor_received_total") == 232
    assert counter(text, "compaction_processor_rejected_total") == 0
    assert counter(text, "compaction_pressure_token_fraction_count") == 120


def test_batches_refused_for_size_are_logged_once_per_sender(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two refusals over OTLP/HTTP (413) and two over gRPC give one warning per transport's
    sender, naming the limit, while every refusal is counted as ``too_large``."""
    caplog.set_level(logging.WARNING, logger="otel_compaction.processor")
    body = trace_request(turn("big", 1, 1000)).SerializeToString() + b"\n\x00" * 20_000
    with running(tmp_path, receivers={"max_request_bytes": 16_384}) as (service, _):
        assert service.http is not None
        assert service.grpc is not None
        statuses = []
        for _attempt in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", service.http.port, timeout=10)
            conn.request("POST", "/v1/traces", body=body,
                         headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
            statuses.append(conn.getresponse().status)
            conn.close()
        channel = grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}")
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        codes = []
        for _attempt in range(2):
            with pytest.raises(grpc.RpcError) as refused:
                export(body, timeout=10)
            codes.append(refused.value.code())
        channel.close()
        too_large = counter(service.metrics.exposition(), "compaction_processor_rejected_total",
                            compaction_processor_reason="too_large")  # fmt: skip
    warnings = [r.getMessage() for r in caplog.records if "max_request_bytes" in r.getMessage()]
    assert statuses == [413, 413]
    assert codes == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
    assert too_large == 4
    assert len(warnings) == 2
    assert all("(16384)" in w for w in warnings)
    assert "from 127.0.0.1" in warnings[0]


def test_a_next_hop_refusing_a_batch_for_its_size_is_not_retried_forever() -> None:
    """A real gRPC server's own size limit (``RESOURCE_EXHAUSTED`` without ``RetryInfo``) makes
    the forwarder drop the batch as refused for good, as the OTLP specification says."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=[("grpc.max_receive_message_length", 1024)])  # fmt: skip
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: b"")
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        Signal.TRACES.spec.service, {"Export": handler})])  # fmt: skip
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        sender = GrpcSender(ForwardConfig(endpoint=f"127.0.0.1:{port}"))
        body = trace_request(turn("big", 1, 1000)).SerializeToString() + b"\n\x00" * 2048
        result = sender.send(Signal.TRACES, body)
        sender.close()
    finally:
        server.stop(0).wait()
    assert result.outcome is Outcome.REJECTED
    assert result.detail.startswith("RESOURCE_EXHAUSTED")


def test_bodies_beyond_the_in_flight_budget_are_told_to_retry(tmp_path: Path) -> None:
    """While one sender holds 12 KB of a 16 KB budget with a body still arriving, another's
    12 KB request is answered 503 with ``Retry-After`` (retried), not held or dropped."""
    limits = {"max_request_bytes": 16_384, "max_inflight_bytes": 16_384}
    with running(tmp_path, receivers=limits) as (service, _):
        assert service.http is not None
        port = service.http.port
        slow = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf"
                     b"\r\nContent-Length: 12000\r\n\r\n" + b"\0" * 100)  # fmt: skip
        time.sleep(0.5)  # the slow body has reserved its 12,000 bytes
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/v1/traces", body=b"\0" * 12_000,
                     headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        answer = conn.getresponse()
        status, retry_after = answer.status, answer.getheader("Retry-After")
        conn.close()
        slow.close()
        after = export_ok(port)
    assert (status, retry_after) == (503, "1")
    assert after


def export_ok(port: int) -> bool:
    """Whether a small request is accepted once the budget is free again."""
    body = trace_request(turn("after", 1, 1000)).SerializeToString()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/v1/traces", body=body,
                     headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        status = conn.getresponse().status
        conn.close()
        if status == 200:
            return True
        time.sleep(0.1)
    return False
