"""The OTLP/HTTP receiver: ``POST /v1/traces``, ``/v1/metrics``, ``/v1/logs``.

Protobuf or JSON bodies, optionally gzip, answered as the OTLP specification
says: 200 with an ``Export*ServiceResponse`` in the request's encoding; 400
with a ``google.rpc.Status`` naming what is wrong; 401 without the bearer
token; 404/405 for other paths and methods; 411 without a length; 413 over the
size limit (compressed or decompressed); 415 for other media types or
encodings; 429 with ``Retry-After`` when the pipeline is full; 503 with
``Retry-After`` when every handler slot is busy.

Built on the standard library's ``ThreadingHTTPServer`` (HTTP/1.1 keep-alive):
the receiver needs no framework, and the parsing cost is protobuf's, not ours.
"""

from __future__ import annotations

import hmac
import logging
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from otel_compaction.processor.decode import (
    JSON,
    PROTOBUF,
    DecodeError,
    Signal,
    decode_body,
    encode_response,
    encode_status,
    media_type,
)
from otel_compaction.processor.pipeline import Overloaded, Pipeline
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger(__name__)

TRANSPORT = "http"
_REASON_BY_STATUS = {
    400: ProcessorReason.MALFORMED,
    401: ProcessorReason.UNAUTHENTICATED,
    411: ProcessorReason.MALFORMED,
    413: ProcessorReason.TOO_LARGE,
    415: ProcessorReason.UNSUPPORTED,
    429: ProcessorReason.OVERLOADED,
    503: ProcessorReason.OVERLOADED,
}
# google.rpc.Code values for the Status body of each HTTP error.
_RPC_CODE = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], receiver: HttpReceiver) -> None:
        self.receiver = receiver
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "otel-compaction"
    timeout = 30  # a client that stops sending mid-body does not hold a thread forever
    server: _Server

    def do_POST(self) -> None:
        self.server.receiver.handle(self)

    def _refuse_method(self) -> None:
        self.server.receiver.reply_error(self, 405, JSON, "only POST is supported")

    do_GET = do_PUT = do_DELETE = do_PATCH = _refuse_method

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class HttpReceiver:
    """An OTLP/HTTP server feeding a pipeline (arguments as for ``GrpcReceiver``)."""

    def __init__(
        self,
        pipeline: Pipeline,
        host: str,
        port: int,
        *,
        max_request_bytes: int,
        max_concurrent: int = 16,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        metrics: ProcessorMetrics | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._limit = max_request_bytes
        self._token = token
        self._metrics = metrics
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._server = _Server((host, port), self)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otlp-http", daemon=True
        )

    def start(self) -> None:
        """Start serving on a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)

    # -------------------------------------------------------------- requests

    def handle(self, req: _Handler) -> None:
        """Answer one POST."""
        signal = Signal.from_path(req.path.split("?", 1)[0])
        kind = JSON if media_type(req.headers.get("Content-Type")) == JSON else PROTOBUF
        if signal is None:
            self._discard_body(req)
            self.reply_error(req, 404, kind, f"no OTLP endpoint at {req.path}")
            return
        if not self._slots.acquire(blocking=False):
            self._discard_body(req)
            self._fail(req, signal, 503, kind, "too many concurrent requests", retry_after=1)
            return
        try:
            self._handle(req, signal, kind)
        finally:
            self._slots.release()

    def _handle(self, req: _Handler, signal: Signal, kind: str) -> None:
        if not self._authorized(req.headers.get("Authorization")):
            self._discard_body(req)
            self._fail(req, signal, 401, kind, "missing or wrong bearer token")
            return
        body = self._read_body(req, signal, kind)
        if body is None:
            return
        try:
            request, data = decode_body(
                signal, body, req.headers.get("Content-Type"),
                req.headers.get("Content-Encoding"), self._limit,
            )  # fmt: skip
            self._pipeline.submit(signal, request, TRANSPORT, data)
        except DecodeError as exc:
            self._fail(req, signal, exc.status, kind, exc.reason)
            return
        except Overloaded as exc:
            self._fail(req, signal, 429, kind, exc.reason, retry_after=exc.retry_after)
            return
        self._send(req, 200, kind, encode_response(signal, kind))

    def _read_body(self, req: _Handler, signal: Signal, kind: str) -> bytes | None:
        length = req.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            req.close_connection = True
            self._fail(req, signal, 411, kind, "a Content-Length header is required")
            return None
        size = int(length)
        if size > self._limit:
            req.close_connection = True  # do not read a body we refuse
            self._fail(req, signal, 413, kind, f"body of {size} bytes exceeds {self._limit}")
            return None
        try:
            return req.rfile.read(size)
        except OSError:
            req.close_connection = True
            return None

    def _authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        scheme, _, presented = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self._token.encode()
        )

    def _discard_body(self, req: _Handler) -> None:
        length = req.headers.get("Content-Length", "")
        if length.isdigit() and int(length) <= self._limit:
            try:
                req.rfile.read(int(length))
                return
            except OSError:
                pass
        req.close_connection = True

    def _fail(
        self, req: _Handler, signal: Signal, status: int, kind: str, reason: str,
        retry_after: int | None = None,
    ) -> None:  # fmt: skip
        if self._metrics is not None and status in _REASON_BY_STATUS:
            self._metrics.rejected(signal, _REASON_BY_STATUS[status], 1)
        self.reply_error(req, status, kind, reason, retry_after)

    def reply_error(
        self, req: _Handler, status: int, kind: str, reason: str, retry_after: int | None = None
    ) -> None:
        """Answer with a ``google.rpc.Status`` body carrying ``reason``."""
        body = encode_status(kind, _RPC_CODE.get(status, 2), reason)
        extra = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        self._send(req, status, kind, body, extra)

    def _send(
        self, req: _Handler, status: int, kind: str, body: bytes,
        extra: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        try:
            req.send_response(status, HTTPStatus(status).phrase)
            req.send_header("Content-Type", kind)
            req.send_header("Content-Length", str(len(body)))
            for name, value in (extra or {}).items():
                req.send_header(name, value)
            if req.close_connection:
                req.send_header("Connection", "close")
            req.end_headers()
            req.wfile.write(body)
        except OSError:
            req.close_connection = True  # the client went away; nothing to answer
