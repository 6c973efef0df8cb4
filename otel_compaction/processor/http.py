"""The OTLP/HTTP receiver: ``POST /v1/traces``, ``/v1/metrics``, ``/v1/logs``.

Protobuf or JSON bodies, optionally gzip, answered as the OTLP specification
says: 200 with an ``Export*ServiceResponse`` in the request's encoding; 400
with a ``google.rpc.Status`` naming what is wrong (also for ambiguous framing:
``Content-Length`` with ``Transfer-Encoding``, or two lengths); 401 without the
bearer token; 404/405 for other paths and methods; 408 for a request not
received within its deadline; 411 without a length; 413 over the size limit
(compressed or decompressed; the refused body is read and discarded first, up
to ``MAX_DRAIN_BYTES``, so the client reads the answer); 415 for other media
types or encodings; 429 with ``Retry-After`` when the pipeline is full; 503
with ``Retry-After`` when every processing slot is busy, the client holds
too many connections, the forwarding queue cannot be written (a full disk) or
the processor failed on the request (never a dropped connection).

A body is read whole before the request takes one of the processing slots, so
a slow sender holds only its own connection
(:mod:`~otel_compaction.processor.connections` bounds those). Built on the
standard library's ``ThreadingHTTPServer`` (HTTP/1.1 keep-alive): the receiver
needs no framework, and the parsing cost is protobuf's, not ours.
"""

from __future__ import annotations

import hmac
import logging
import ssl
import threading
from http import HTTPStatus
from typing import Any

from otel_compaction.otlp.decode import (
    JSON,
    PROTOBUF,
    DecodeError,
    Signal,
    decode_body,
    encode_response,
    encode_status,
    media_type,
)
from otel_compaction.processor.connections import (
    ByteBudget,
    DeadlineHandler,
    LimitedHTTPServer,
    PeerNotices,
)
from otel_compaction.processor.pipeline import Overloaded, Pipeline, Unavailable
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason, ProcessorTransport

logger = logging.getLogger(__name__)

TRANSPORT = ProcessorTransport.HTTP
RETRY_SECONDS = 5
"""The ``Retry-After`` told to a sender whose request the processor failed on."""
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
_RPC_CODE = {
    400: 3, 401: 16, 404: 5, 405: 12, 408: 4, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14,
}  # fmt: skip
_CHUNK = 65536
MAX_DRAIN_BYTES = 64 << 20
"""A refused body up to this size is read and discarded before the answer (else: close)."""


def content_length(headers: Any) -> int | DecodeError:
    """The body's length from the headers, or the error to answer (framing we refuse)."""
    lengths = headers.get_all("Content-Length") or []
    if headers.get("Transfer-Encoding") is not None:
        if lengths:  # both framings: a proxy in front may read another body (smuggling)
            return DecodeError(400, "Content-Length and Transfer-Encoding together are refused")
        return DecodeError(411, "a Content-Length header is required (no chunked bodies)")
    if not lengths:
        return DecodeError(411, "a Content-Length header is required")
    if len(lengths) > 1:
        return DecodeError(400, "more than one Content-Length header")
    text = lengths[0].strip()
    if not (text.isascii() and text.isdigit()):
        return DecodeError(400, f"Content-Length must be a number of bytes, got {text[:20]!r}")
    return int(text)


class _Handler(DeadlineHandler):
    server_version = "otel-compaction"
    server: _Server

    def do_POST(self) -> None:
        self.server.receiver.handle(self)

    def _refuse_method(self) -> None:
        self.server.receiver.reply_error(self, 405, JSON, "only POST is supported")

    do_GET = do_PUT = do_DELETE = do_PATCH = _refuse_method

    def timed_out(self) -> None:
        self.server.receiver.timed_out(self)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class _Server(LimitedHTTPServer):
    def __init__(self, address: tuple[str, int], receiver: HttpReceiver, **limits: Any) -> None:
        self.receiver = receiver
        super().__init__(address, _Handler, **limits)


class HttpReceiver:
    """An OTLP/HTTP server feeding a pipeline (arguments as for ``GrpcReceiver``, and the
    connection bounds of :mod:`~otel_compaction.processor.connections`)."""

    def __init__(
        self,
        pipeline: Pipeline,
        host: str,
        port: int,
        *,
        max_request_bytes: int,
        max_concurrent: int = 16,
        max_inflight_bytes: int = 256 << 20,
        request_timeout: float = 30.0,
        max_connections: int = 128,
        max_connections_per_peer: int = 32,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        metrics: ProcessorMetrics | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._limit = max_request_bytes
        self._token = token
        self._metrics = metrics
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._budget = ByteBudget(max_inflight_bytes)
        self._notices = PeerNotices(logger)
        self._server = _Server(
            (host, port), self, request_timeout=request_timeout,
            max_connections=max_connections, max_per_peer=max_connections_per_peer,
            on_shed=self._shed,
        )  # fmt: skip
        if tls is not None:
            # The handshake happens in the connection's thread, within the request deadline.
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
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

    def connections(self) -> int:
        """Connections open now."""
        return self._server.connections()

    # -------------------------------------------------------------- requests

    def handle(self, req: _Handler) -> None:
        """Answer one POST: framing and auth first, the whole body read, then a slot."""
        signal = Signal.from_path(req.path.split("?", 1)[0])
        kind = JSON if media_type(req.headers.get("Content-Type")) == JSON else PROTOBUF
        size = content_length(req.headers)
        if isinstance(size, DecodeError):
            req.close_connection = True  # where this body ends is unknown: nothing more is read
            self._fail(req, signal, size.status, kind, size.reason)
            return
        if signal is None:
            self._drain(req, size)
            self.reply_error(req, 404, kind, f"no OTLP endpoint at {req.path}")
            return
        if not self._authorized(req.headers.get("Authorization")):
            self._drain(req, size)
            self._fail(req, signal, 401, kind, "missing or wrong bearer token")
            return
        if size > self._limit:
            self._too_large(req, signal, kind, size)
            return
        if not self._budget.reserve(size):
            self._drain(req, size)  # read and discarded, not held: the client reads the answer
            self._fail(req, signal, 503, kind, "too many bytes in flight", retry_after=1)
            return
        try:
            self._receive(req, signal, kind, size)
        finally:
            self._budget.release(size)

    def _receive(self, req: _Handler, signal: Signal, kind: str, size: int) -> None:
        body = self._read_body(req, size)
        if body is None:
            return
        if not self._slots.acquire(blocking=False):
            self._fail(req, signal, 503, kind, "too many concurrent requests", retry_after=1)
            return
        try:
            self._process(req, signal, kind, body)
        finally:
            self._slots.release()

    def _too_large(self, req: _Handler, signal: Signal, kind: str, size: int) -> None:
        """413 (not retried: the sender drops the batch), and a warning once per sender."""
        self._drain(req, size)
        self._notices.once(
            req.client_address[0],
            "refused a %s request of %d bytes from %s over receivers.max_request_bytes (%d): "
            "the sender drops such batches; bound its batches in bytes (docs/processor.md, "
            "Batch size) or raise the limit",
            signal.spec.name, size, req.client_address[0], self._limit,
        )  # fmt: skip
        self._fail(req, signal, 413, kind, f"body of {size} bytes exceeds {self._limit}")

    def _process(self, req: _Handler, signal: Signal, kind: str, body: bytes) -> None:
        try:
            request, data = decode_body(
                signal, body, req.headers.get("Content-Type"),
                req.headers.get("Content-Encoding"), self._limit,
            )  # fmt: skip
            self._pipeline.submit(signal, request, TRANSPORT, data)
        except DecodeError as exc:
            self._fail(req, signal, exc.status, kind, exc.reason)
            return
        except Unavailable as exc:
            self._fail(req, signal, 503, kind, exc.reason, exc.retry_after, exc.cause)
            return
        except Overloaded as exc:
            self._fail(req, signal, 429, kind, exc.reason, retry_after=exc.retry_after)
            return
        except Exception:  # a fault of ours, not of the request: "retry later", never a reset
            logger.exception("cannot accept a %s request", signal.spec.name)
            self._fail(req, signal, 503, kind, "the processor failed on this request",
                       RETRY_SECONDS, ProcessorReason.ANALYSIS_ERROR)  # fmt: skip
            return
        self._send(req, 200, kind, encode_response(signal, kind))

    def _read_body(self, req: _Handler, size: int, keep: bool = True) -> bytes | None:
        """The body, read as it arrives (a slow one holds what it sent, not what it
        announced); None when it did not arrive whole (the connection is closed)."""
        chunks = []
        left = size
        try:
            while left:
                chunk = req.rfile.read(min(left, _CHUNK))
                if not chunk:
                    break
                if keep:
                    chunks.append(chunk)
                left -= len(chunk)
        except OSError:  # the deadline passed (the handler answers 408) or a reset
            left = -1
        if left:
            req.close_connection = True
            return None
        req.body_received()
        return b"".join(chunks)

    def _drain(self, req: _Handler, size: int) -> None:
        """Read and discard a refused body, so the client reads the answer, not a reset.

        Bounded by ``MAX_DRAIN_BYTES`` and the request deadline; past either the
        answer goes with ``Connection: close``.
        """
        if size > MAX_DRAIN_BYTES:
            req.close_connection = True
        else:
            self._read_body(req, size, keep=False)

    def timed_out(self, req: _Handler) -> None:
        """A request cut at its deadline: 408, the connection closed, counted."""
        if self._metrics is not None:
            self._metrics.shed(ProcessorReason.REQUEST_TIMEOUT)
        self.reply_error(req, 408, PROTOBUF, "the request was not received within the deadline")

    def _shed(self, reason: ProcessorReason) -> None:
        if self._metrics is not None:
            self._metrics.shed(reason)

    def _authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        scheme, _, presented = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self._token.encode()
        )

    def _fail(
        self, req: _Handler, signal: Signal | None, status: int, kind: str, reason: str,
        retry_after: int | None = None, cause: ProcessorReason | None = None,
    ) -> None:  # fmt: skip
        cause = cause or _REASON_BY_STATUS.get(status)
        if self._metrics is not None and signal is not None and cause is not None:
            self._metrics.rejected(signal, cause, 1)
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
            req.write_timeout()
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
