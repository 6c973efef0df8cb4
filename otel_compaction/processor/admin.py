"""The admin endpoint: ``/metrics`` (Prometheus text), ``/healthz`` and ``/readyz``.

``/healthz`` answers 200 while the process serves at all (liveness), 503 when
the status says ``stuck`` (a batch held far past its reorder window: the
queue behind it cannot move) or names a ``queue_error`` (the forwarding queue
cannot be written: every request is refused meanwhile); ``/readyz`` answers
200 once the receivers listen and until draining starts, 503 otherwise or in
either of those cases (readiness: take the replica out of the Collector's
resolver).
Both return a small JSON document with the queue and state sizes.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST

logger = logging.getLogger(__name__)

StatusFn = Callable[[], dict[str, Any]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], admin: AdminServer) -> None:
        self.admin = admin
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _Server

    def do_GET(self) -> None:
        admin = self.server.admin
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, CONTENT_TYPE_LATEST, admin.exposition())
        elif path in ("/healthz", "/livez"):
            status = admin.status()
            code = 503 if _unhealthy(status) else 200
            self._send(code, "application/json", json.dumps(status).encode())
        elif path == "/readyz":
            status = admin.status()
            code = 200 if admin.ready.is_set() and not _unhealthy(status) else 503
            status["ready"] = code == 200
            self._send(code, "application/json", json.dumps(status).encode())
        else:
            self._send(404, "text/plain", b"not found: try /metrics, /healthz, /readyz\n")

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("admin %s " + format, self.address_string(), *args)


def _unhealthy(status: dict[str, Any]) -> bool:
    return bool(status.get("stuck") or status.get("queue_error"))


class AdminServer:
    """Serves metrics and health on its own port.

    Args:
        host, port: where to listen (port 0 picks a free one).
        exposition: returns the Prometheus text exposition.
        status: returns the JSON status document.
    """

    def __init__(
        self, host: str, port: int, *, exposition: Callable[[], bytes], status: StatusFn
    ) -> None:
        self.exposition = exposition
        self.status = status
        self.ready = threading.Event()
        self._server = _Server((host, port), self)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otel-compaction-admin", daemon=True
        )

    def start(self) -> None:
        """Start serving on a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
