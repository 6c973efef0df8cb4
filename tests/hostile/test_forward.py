"""A next hop answering 500 loses the batch by the OTLP rules; it is counted."""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.inputs import counter, trace_request, turn
from tests.processor.service_util import running, wait_for

pytestmark = pytest.mark.slow


class _Failing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    calls = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).calls += 1
        body = b"internal error"
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def failing_hop() -> Iterator[ThreadingHTTPServer]:
    """An OTLP/HTTP next hop that answers every export with 500."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_500_from_the_next_hop_is_counted_as_dropped_with_its_reason(
    tmp_path: Path, failing_hop: ThreadingHTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Not retried forever: dropped_total{downstream_rejected} and a log line say so."""
    port = failing_hop.server_address[1]
    forward = {"endpoint": f"http://127.0.0.1:{port}", "protocol": "http/protobuf"}
    caplog.set_level(logging.ERROR, logger="otel_compaction.processor.forward")
    with running(tmp_path, "enrich", forward=forward) as (svc, _):
        assert svc.http is not None
        request = trace_request(turn("hop", 1, 1000), turn("hop", 2, 2000))
        conn = http.client.HTTPConnection("127.0.0.1", svc.http.port, timeout=10)
        conn.request("POST", "/v1/traces", body=request.SerializeToString(),
                     headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        assert conn.getresponse().status == 200
        conn.close()

        def dropped() -> float:
            return counter(svc.metrics.exposition(), "compaction_processor_dropped_total",
                           compaction_processor_reason="downstream_rejected")  # fmt: skip

        assert wait_for(lambda: dropped() == 2)
        assert len(svc) == 0
    assert _Failing.calls == 1
    assert any("HTTP 500" in r.getMessage() for r in caplog.records)


def test_the_docs_name_a_500_beside_a_400_as_dropped() -> None:
    """docs/processor.md says which answers of the next hop drop a batch, 500 among them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "processor.md").read_text()
    sentence = page[page.index("A batch refused\n  for good") :].split("downstream_rejected")[0]
    assert "HTTP 400, 500" in sentence
