"""A full disk under the forwarding queue: "retry later", nothing lost.

The real case runs the processor in a private mount namespace on a tiny tmpfs filled to the
last page (root and ``unshare`` needed, else skipped); the in-process case injects ``ENOSPC``
under the queue's writes and looks at the counters, the log line and the health document.
"""

from __future__ import annotations

import errno
import http.client
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.rpc import error_details_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction import semconv as sc
from otel_compaction.processor.queue import PersistentQueue
from tests.hostile.inputs import counter, trace_request, turn
from tests.processor.conftest import PipelineFactory, queued
from tests.processor.downstream import Downstream, free_port
from tests.processor.golden import TESTDATA, read_requests
from tests.processor.service_util import ROOT, http_ready, running, wait_for

pytestmark = pytest.mark.slow


def _spans(conversation: str, turns: int) -> list[ReadableSpan]:
    """Inference spans of ours, made by the real SDK."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    for n in range(1, turns + 1):
        with tracer.start_as_current_span("chat claude-sonnet-4-5") as span:
            span.set_attribute(sc.CONVERSATION_ID, conversation)
            span.set_attribute(sc.TURN_INDEX, n)
            span.set_attribute(sc.CONTEXT_TOKENS, 1000 * n)
            span.set_attribute(sc.GEN_AI_REQUEST_MODEL, "claude-sonnet-4-5")
    provider.shutdown()
    return list(memory.get_finished_spans())


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture
def full_disk_processor(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, Any]]]:
    """An enrich-mode processor whose queue is on a full 512 KiB tmpfs of its own namespace."""
    if not _can_unshare():
        pytest.skip("needs root and unshare -m for a private tmpfs")
    downstream = Downstream(free_port())
    downstream.start()
    mount = tmp_path / "disk"
    mount.mkdir()
    ports = {"grpc": free_port(), "http": free_port(), "admin": free_port()}
    config = tmp_path / "processor.yaml"
    config.write_text(yaml.safe_dump({
        "receivers": {"otlp_grpc": f"127.0.0.1:{ports['grpc']}",
                      "otlp_http": f"127.0.0.1:{ports['http']}"},
        "metrics": {"endpoint": f"127.0.0.1:{ports['admin']}"},
        "output": {"mode": "enrich", "log_findings": False},
        "processing": {"reorder_window_seconds": 0.0},
        "forward": {"endpoint": f"127.0.0.1:{downstream.port}",
                    "queue": {"directory": str(mount / "queue")}},
    }))  # fmt: skip
    script = (
        f"mount -t tmpfs -o size=512k tmpfs {mount} && mkdir {mount}/queue && "
        f"(dd if=/dev/zero of={mount}/filler bs=4k 2>/dev/null || true) && "
        f'exec "{sys.executable}" -m otel_compaction processor --config {config}'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "run.err", "wb") as err:
        process = subprocess.Popen(["unshare", "-m", "sh", "-c", script], stderr=err, env=env)
    info: dict[str, Any] = {**ports, "downstream": downstream, "filler": mount / "filler",
                            "log": tmp_path / "run.err"}  # fmt: skip
    try:
        assert wait_for(lambda: http_ready(ports["admin"]), 30), (tmp_path / "run.err").read_text()
        yield process, info
    finally:
        process.terminate()
        process.wait(30)
        downstream.stop()


def test_a_full_tmpfs_refuses_with_retry_later_and_the_sdk_delivers_once_space_is_freed(
    full_disk_processor: tuple[subprocess.Popen[bytes], dict[str, Any]],
) -> None:
    """On a really full disk the real SDK exporters are told to retry (gRPC ``UNAVAILABLE`` with
    ``RetryInfo``, HTTP 503 with ``Retry-After``), /healthz says why, and once space is freed
    their retries deliver every span downstream."""
    process, info = full_disk_processor
    grpc_spans, http_spans = _spans("disk-grpc", 3), _spans("disk-http", 4)
    raw = trace_request(turn("disk-raw", 1, 1000)).SerializeToString()
    channel = grpc.insecure_channel(f"127.0.0.1:{info['grpc']}")
    export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
    with pytest.raises(grpc.RpcError) as refused:
        export(raw, timeout=10)
    channel.close()
    conn = http.client.HTTPConnection("127.0.0.1", info["http"], timeout=10)
    conn.request("POST", "/v1/traces", body=raw, headers={"Content-Type": "application/x-protobuf"})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    health, body = _get(info["admin"], "/healthz")
    results: dict[str, SpanExportResult] = {}
    senders = [
        threading.Thread(target=lambda: results.__setitem__("grpc", GrpcExporter(
            endpoint=f"127.0.0.1:{info['grpc']}", insecure=True, timeout=30).export(grpc_spans))),
        threading.Thread(target=lambda: results.__setitem__("http", HttpExporter(
            endpoint=f"http://127.0.0.1:{info['http']}/v1/traces", timeout=30).export(http_spans))),
    ]  # fmt: skip
    for sender in senders:
        sender.start()
    time.sleep(1.5)  # both have been refused at least once by now
    os.remove(f"/proc/{process.pid}/root{info['filler']}")
    for sender in senders:
        sender.join(60)
    delivered = wait_for(lambda: len(info["downstream"].spans()) == 7, 30)
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    trailers = dict(refused.value.trailing_metadata() or ())
    delay = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert delay.retry_delay.seconds > 0
    assert (answer.status, answer.getheader("Retry-After")) == (503, "5")
    assert health == 503
    assert "No space left on device" in json.loads(body)["queue_error"]
    assert results == {"grpc": SpanExportResult.SUCCESS, "http": SpanExportResult.SUCCESS}
    assert delivered
    assert json.loads(_get(info["admin"], "/healthz")[1])["queue_error"] is None
    log = info["log"].read_text()
    assert log.count("cannot be written (No space left on device (errno 28))") == 1
    assert "writable again" in log


def _full(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_injected_enospc_is_counted_logged_once_and_reported_until_a_write_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every refused request counts in rejected_total{queue_unwritable}, the failure is logged
    once, /healthz and /readyz answer 503 naming it, and the next write that works clears it."""
    caplog.set_level(logging.WARNING, logger="otel_compaction.processor.pipeline")
    downstream = Downstream(free_port())
    downstream.start()
    forward = {"endpoint": f"127.0.0.1:{downstream.port}"}
    try:
        with running(tmp_path, "enrich", forward=forward) as (service, _):
            assert service.http is not None
            assert service.admin is not None
            admin = service.admin.port
            monkeypatch.setattr(PersistentQueue, "_write_file", staticmethod(_full))
            statuses = []
            for n in range(1, 4):
                body = trace_request(turn("enospc", n, 1000 * n), seed=n).SerializeToString()
                conn = http.client.HTTPConnection("127.0.0.1", service.http.port, timeout=10)
                conn.request("POST", "/v1/traces", body=body,
                             headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
                statuses.append(conn.getresponse().status)
                conn.close()
            unwritable = counter(service.metrics.exposition(),
                                 "compaction_processor_rejected_total",
                                 compaction_processor_reason="queue_unwritable")  # fmt: skip
            health, ready = _get(admin, "/healthz"), _get(admin, "/readyz")
            leftovers = list((tmp_path / "queue").glob("*.tmp"))
            monkeypatch.undo()
            recovered = wait_for(lambda: service.status()["queue_error"] is None)
            assert export_ok(service.http.port)
            assert wait_for(lambda: len(downstream.spans()) == 1)
    finally:
        downstream.stop()
    assert statuses == [503, 503, 503]
    assert unwritable == 3
    assert (health[0], ready[0]) == (503, 503)
    assert json.loads(health[1])["queue_error"].startswith("No space left on device (errno 28)")
    assert leftovers == []
    assert recovered
    messages = [r.getMessage() for r in caplog.records]
    assert sum("cannot be written" in m for m in messages) == 1
    assert sum("writable again" in m for m in messages) == 1


def export_ok(port: int) -> bool:
    """Whether one span exported over OTLP/HTTP by the real SDK is accepted."""
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=10)
    return exporter.export(_spans("after", 1)) is SpanExportResult.SUCCESS


def test_findings_raised_while_the_disk_is_full_are_held_and_queued_after(
    tmp_path: Path, pipeline_factory: PipelineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tap mode: the boundary finding raised while the queue cannot be written waits in memory
    and is queued as a finding span once a probe finds the disk writable again."""
    pipeline, _ = pipeline_factory("tap")
    for signal, request in read_requests(TESTDATA / "boundary_000.traces.jsonl"):
        pipeline.submit(signal, request, "http")
    monkeypatch.setattr(PersistentQueue, "_write_file", staticmethod(_full))
    pipeline.step()
    held, error = queued(pipeline), pipeline.queue_error()  # a finding's write was refused
    monkeypatch.undo()
    assert wait_for(lambda: pipeline.step() >= 0 and bool(queued(pipeline)), 5)
    spans = [s for r in queued(pipeline) for rs in r.resource_spans for ss in rs.scope_spans
             for s in ss.spans]  # fmt: skip
    assert held == []
    assert error is not None
    assert [s.name for s in spans] == [sc.SPAN_FINDING]
    assert pipeline.queue_error() is None
