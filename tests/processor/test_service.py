"""The service end to end: /metrics and health, outages, crashes, SIGTERM."""

from __future__ import annotations

import json
import signal
import urllib.request
from pathlib import Path

import pytest
import yaml

from otel_compaction import semconv as sc
from tests.processor.downstream import Downstream, free_port
from tests.processor.golden import TESTDATA
from tests.processor.scenarios import SCENARIOS, render
from tests.processor.service_util import (
    export_spans,
    http_ready,
    running,
    start_process,
    wait_for,
)

pytestmark = pytest.mark.slow


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_metrics_are_exported_with_their_pinned_names_and_counters_start_at_zero(
    tmp_path: Path,
) -> None:
    """/metrics carries every counter at 0 from start-up under ``MetricSpec.prometheus``."""
    with running(tmp_path) as (service, _out):
        assert service.admin is not None
        status, body = _get(service.admin.port, "/metrics")
        text = body.decode()
    assert status == 200
    for spec in sc.ALL_METRICS:
        if spec.kind == "counter" and spec is not sc.METRIC_PHASE_TRANSITIONS:
            assert f"\n{spec.prometheus}{{" in text, spec.prometheus
    for spec in (sc.METRIC_LIVELOCKED, sc.METRIC_ACTIVE, sc.METRIC_PROCESSOR_QUEUE):
        assert f"\n{spec.prometheus}{{" in text, spec.prometheus
    line = 'compaction_findings_total{compaction_finding_kind="reexpansion_livelock",'
    assert line in text
    assert 'compaction_processor_rejected_total{compaction_processor_reason="overloaded"' in text


def test_health_and_readiness(tmp_path: Path) -> None:
    """/healthz and /readyz answer 200 with the state sizes while the service runs."""
    with running(tmp_path) as (service, _out):
        assert service.admin is not None
        health, body = _get(service.admin.port, "/healthz")
        ready, _ = _get(service.admin.port, "/readyz")
        service.admin.ready.clear()  # what stop() does first
        not_ready, _ = _get(service.admin.port, "/readyz")
    assert (health, ready, not_ready) == (200, 200, 503)
    assert json.loads(body)["mode"] == "tap"


def test_downstream_outage_loses_nothing_and_keeps_order(tmp_path: Path) -> None:
    """Enrich mode, next hop down: every accepted span arrives, in order, once it is up."""
    downstream = Downstream(free_port())
    spans = render("livelock_004", SCENARIOS["livelock_004"](), 2).spans
    retry = {"initial_interval_seconds": 0.05, "max_interval_seconds": 0.2}
    forward = {"endpoint": f"127.0.0.1:{downstream.port}", "retry": retry}
    try:
        with running(tmp_path, "enrich", forward=forward,
                     processing={"reorder_window_seconds": 0.05}) as (service, _out):  # fmt: skip
            assert service.http is not None
            assert service.queue is not None
            export_spans(service.http.port, spans)
            assert wait_for(lambda: service.forwarder is not None
                            and service.forwarder.last_error is not None)  # fmt: skip
            assert len(service.queue) > 0
            downstream.start()
            assert wait_for(lambda: len(downstream.spans()) == len(spans))
        got = downstream.spans()
        assert [s.span_id for s in got] == [s.context.span_id.to_bytes(8, "big") for s in spans]
        flagged = [s for s in got if any(kv.key == sc.FLAG_LIVELOCK for kv in s.attributes)]
        assert len(flagged) == 3
    finally:
        downstream.stop()


def _write_config(tmp_path: Path, mode: str, downstream: int, window: float) -> tuple[Path, int]:
    http_port = free_port()
    config = {
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{http_port}"},
        "metrics": {"endpoint": None},
        "output": {"mode": mode},
        "processing": {"reorder_window_seconds": window},
        "forward": {"endpoint": f"127.0.0.1:{downstream}", "drain_timeout_seconds": 10,
                    "retry": {"initial_interval_seconds": 0.05, "max_interval_seconds": 0.2},
                    "queue": {"directory": str(tmp_path / "queue")}},
    }  # fmt: skip
    path = tmp_path / "processor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, http_port


def test_kill_and_restart_mid_stream_replays_the_queue(tmp_path: Path) -> None:
    """SIGKILL after accepting spans (next hop down): the restarted process delivers them all."""
    downstream = Downstream(free_port())
    config, port = _write_config(tmp_path, "enrich", downstream.port, window=30.0)
    spans = render("boundary_000", SCENARIOS["boundary_000"](), 1).spans
    first = start_process(config, "first")
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, spans[:21])
    finally:
        first.kill()
        first.wait(10)
    assert list((tmp_path / "queue").glob("*.raw"))  # accepted, unprocessed, on disk
    second = start_process(config, "second")
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, spans[21:])
        downstream.start()
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0, (tmp_path / "second.err").read_text()
        got = {s.span_id for s in downstream.spans()}
        assert got == {s.context.span_id.to_bytes(8, "big") for s in spans}
    finally:
        if second.poll() is None:
            second.kill()
        downstream.stop()


def test_tap_mode_sigkill_with_spans_in_the_window_loses_none(tmp_path: Path) -> None:
    """Tap mode, SIGKILL while accepted spans wait in the reorder window: the restarted
    process applies them from its queue and sends the same findings, then deletes them."""
    downstream = Downstream(free_port())
    config, port = _write_config(tmp_path, "tap", downstream.port, window=30.0)
    spans = render("boundary_000", SCENARIOS["boundary_000"](), 1).spans
    first = start_process(config, "first")
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, spans)
    finally:
        first.kill()
        first.wait(10)
    assert not (tmp_path / "first.out").read_text()  # nothing applied before the kill
    assert list((tmp_path / "queue").glob("*.raw"))  # accepted, on disk
    downstream.start()
    second = start_process(config, "second")
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0, (tmp_path / "second.err").read_text()
        stdout = (tmp_path / "second.out").read_text()
        findings = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        assert findings == json.loads((TESTDATA / "boundary_000.findings.json").read_text())
        assert [s.name for s in downstream.spans()] == [sc.SPAN_FINDING]
        assert not list((tmp_path / "queue").iterdir())
    finally:
        if second.poll() is None:
            second.kill()
        downstream.stop()


def test_sigterm_applies_the_window_and_sends_the_findings_before_exit(tmp_path: Path) -> None:
    """SIGTERM with spans still in a long reorder window: findings are computed and delivered."""
    downstream = Downstream(free_port())
    downstream.start()
    config, port = _write_config(tmp_path, "tap", downstream.port, window=30.0)
    spans = render("boundary_000", SCENARIOS["boundary_000"](), 1).spans
    process = start_process(config)
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, spans)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, (tmp_path / "run.err").read_text()
        stdout = (tmp_path / "run.out").read_text()
        findings = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        oracle = json.loads((TESTDATA / "boundary_000.findings.json").read_text())
        assert findings == oracle
        assert [s.name for s in downstream.spans()] == [sc.SPAN_FINDING]
        assert not list((tmp_path / "queue").iterdir())
    finally:
        if process.poll() is None:
            process.kill()
        downstream.stop()


def test_start_logs_the_bound_addresses_mode_and_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """At start the service logs, in one line, each address it listens on, its mode and output."""
    caplog.set_level("INFO", logger="otel_compaction.processor.service")
    with running(tmp_path) as (service, _out):
        assert service.grpc is not None
        assert service.http is not None
        assert service.admin is not None
        ports = (service.grpc.port, service.http.port, service.admin.port)
    (line,) = [r.getMessage() for r in caplog.records if "listening:" in r.getMessage()]
    assert line.startswith("otel-compaction processor: tap mode; listening: ")
    assert f"OTLP/gRPC on 127.0.0.1:{ports[0]}" in line
    assert f"OTLP/HTTP on 127.0.0.1:{ports[1]}" in line
    assert f"/metrics, /healthz and /readyz on 127.0.0.1:{ports[2]}" in line
    assert "forwarding to 127.0.0.1:1" in line


@pytest.mark.parametrize("receiver", ["otlp_grpc", "otlp_http"])
def test_an_address_in_use_is_named_in_the_error(tmp_path: Path, receiver: str) -> None:
    """A receiver that cannot bind raises an OSError naming the receiver and its address."""
    import socket

    from otel_compaction.processor.service import ProcessorService
    from tests.processor.conftest import make_config

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        config = make_config(tmp_path, receivers={receiver: address})
        service = ProcessorService(config)
        try:
            with pytest.raises(OSError, match=r"cannot listen for OTLP/(gRPC|HTTP) on ") as err:
                service.start()
        finally:
            service.stop()
    assert address in str(err.value)
    assert ("gRPC" if receiver == "otlp_grpc" else "HTTP") in str(err.value)
