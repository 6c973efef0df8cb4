"""End to end: a hostile span over OTLP/HTTP never stops an enrich-mode service."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.processor import pipeline as pipeline_module
from tests.hostile.inputs import langchain_compaction, trace_request, turn
from tests.processor.downstream import Downstream, free_port
from tests.processor.service_util import running, wait_for

pytestmark = pytest.mark.slow


def _request(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Content-Type": "application/x-protobuf"} if body else {}
        conn.request(method, path, body=body or None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_the_issue_span_and_everything_after_it_reach_the_next_hop(tmp_path: Path) -> None:
    """The "1e30" compaction span and ten batches behind it all arrive downstream."""
    downstream = Downstream(free_port())
    downstream.start()
    forward = {"endpoint": f"127.0.0.1:{downstream.port}"}
    try:
        with running(tmp_path, "enrich", forward=forward) as (service, _):
            assert service.http is not None
            assert service.admin is not None
            bodies = [trace_request(langchain_compaction("1e30"), seed=1).SerializeToString()]
            bodies += [
                trace_request(turn("hostile-2", n, 1000 * n), seed=n + 1).SerializeToString()
                for n in range(1, 11)
            ]
            statuses = [_request(service.http.port, "POST", "/v1/traces", b)[0] for b in bodies]
            assert statuses == [200] * 11
            assert wait_for(lambda: len(downstream.spans()) == 11)
            health, body = _request(service.admin.port, "GET", "/healthz")
        assert health == 200
        assert json.loads(body)["stuck"] is False
    finally:
        downstream.stop()


def test_healthz_reports_a_queue_that_cannot_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that cannot be released (a full disk) turns /healthz and /readyz to 503."""
    monkeypatch.setattr(pipeline_module, "STUCK_AFTER_SECONDS", 0.0)
    forward = {"endpoint": f"127.0.0.1:{free_port()}"}
    with running(tmp_path, "enrich", forward=forward) as (service, _):
        assert service.http is not None
        assert service.admin is not None
        assert service.queue is not None

        def full(*_: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(service.queue, "complete", full)
        body = trace_request(turn("hostile-2", 1, 1000)).SerializeToString()
        assert _request(service.http.port, "POST", "/v1/traces", body)[0] == 200
        admin = service.admin.port
        assert wait_for(lambda: _request(admin, "GET", "/healthz")[0] == 503)
        status = json.loads(_request(admin, "GET", "/healthz")[1])
        ready = _request(admin, "GET", "/readyz")[0]
        monkeypatch.undo()
    assert status["stuck"] is True
    assert status["oldest_batch_seconds"] > 0
    assert ready == 503
