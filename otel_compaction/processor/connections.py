"""What one HTTP client may hold: a deadline per request, and caps on open connections.

A thread serves each connection (the standard library's ``ThreadingHTTPServer``).
Without bounds, a client that sends its headers and then one body byte every
few seconds holds its thread, and with sixteen of them every handler. So:

* ``DeadlineReader`` sits under a handler's ``rfile``: between requests a read
  waits at most ``IDLE_SECONDS`` (then the kept-alive connection is closed);
  once a request's first byte is in, every read is bounded by what is left of
  that request's deadline, so headers and body together arrive within
  ``receivers.request_timeout_seconds`` however slowly they trickle;
* ``LimitedHTTPServer`` counts open connections per peer address and in all,
  and refuses one over ``receivers.max_connections_per_peer`` or
  ``receivers.max_connections`` with a 503 (``Connection: close``) before any
  thread is started for it.

Whatever is shed is reported to the ``on_shed`` callback (the processor counts
it in ``compaction.processor.connections.shed`` by reason).

``ByteBudget`` bounds the bodies held at once (by their announced lengths), and
``PeerNotices`` logs a sender's first request refused for its size, once.
"""

from __future__ import annotations

import io
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger(__name__)

IDLE_SECONDS = 30.0
"""How long a kept-alive connection may wait for its next request."""

ShedListener = Callable[[ProcessorReason], None]
MAX_NOTICED_PEERS = 1024
"""Senders remembered as told about (beyond, the log may repeat for a sender)."""

_REFUSAL_BODY = json.dumps({"code": 14, "message": "too many open connections"}).encode()
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
    % (len(_REFUSAL_BODY), _REFUSAL_BODY)
)


class DeadlineReader(io.RawIOBase):
    """A socket's reads, each bounded by the idle timeout or by the request's deadline.

    ``deadline`` (monotonic seconds) is set by the handler when a request starts
    and cleared when its body is in; ``expired`` tells that a read failed because
    the deadline passed (the handler then answers 408 and counts it).
    """

    def __init__(self, sock: socket.socket, idle: float = IDLE_SECONDS) -> None:
        super().__init__()
        self._sock = sock
        self._idle = idle
        self.deadline: float | None = None
        self.expired = False

    def readable(self) -> bool:
        """Always: this is a reader."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Read what the socket has, waiting no longer than the deadline allows."""
        deadline = self.deadline
        if deadline is None:
            self._sock.settimeout(self._idle)
        else:
            left = deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                raise TimeoutError("the request deadline passed")
            self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            if deadline is not None:
                self.expired = True
            raise


class DeadlineHandler(BaseHTTPRequestHandler):
    """A request handler whose requests must arrive within the server's ``request_timeout``.

    Subclasses are told about a request cut at its deadline through ``timed_out``.
    """

    protocol_version = "HTTP/1.1"
    server: LimitedHTTPServer
    reader: DeadlineReader
    buffered: io.BufferedReader

    def setup(self) -> None:
        """Wrap the socket's reads in a ``DeadlineReader``; finish a TLS handshake in time."""
        super().setup()
        sock = self.connection
        if isinstance(sock, ssl.SSLSocket):
            sock.settimeout(self.server.request_timeout)
            sock.do_handshake()  # here, not in the accepting thread
        self.reader = DeadlineReader(sock)
        self.buffered = io.BufferedReader(self.reader, 65536)
        self.rfile = self.buffered

    def handle_one_request(self) -> None:
        """Wait (idle) for a request, then serve it within its deadline."""
        try:
            if not self.buffered.peek(1):
                self.close_connection = True
                return
        except OSError:  # idle too long, or the client went away: nothing to answer
            self.close_connection = True
            return
        self.reader.deadline = time.monotonic() + self.server.request_timeout
        try:
            super().handle_one_request()
        finally:
            self.reader.deadline = None
        if self.reader.expired:
            self.reader.expired = False
            self.close_connection = True
            self.timed_out()

    def body_received(self) -> None:
        """The body is in: what follows (processing, the answer) is not the client's time."""
        self.reader.deadline = None

    def timed_out(self) -> None:
        """A request was cut at its deadline (the connection is closed after this)."""

    def write_timeout(self) -> None:
        """Bound the writes of an answer (a client that does not read cannot hold us)."""
        self.connection.settimeout(self.server.request_timeout)


class LimitedHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server with caps on open connections, per peer and in all."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        request_timeout: float,
        max_connections: int,
        max_per_peer: int,
        on_shed: ShedListener | None = None,
    ) -> None:
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self.max_per_peer = max_per_peer
        self.on_shed = on_shed
        self._lock = threading.Lock()
        self._peers: dict[str, int] = {}
        self._open: dict[int, str] = {}
        super().__init__(address, handler)

    def connections(self) -> int:
        """Connections open now."""
        with self._lock:
            return len(self._open)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Admit the connection if its peer and the server are under their caps."""
        peer = str(client_address[0])
        with self._lock:
            if len(self._open) >= self.max_connections:
                reason = ProcessorReason.CONNECTIONS
            elif self._peers.get(peer, 0) >= self.max_per_peer:
                reason = ProcessorReason.PEER_CONNECTIONS
            else:
                self._open[id(request)] = peer
                self._peers[peer] = self._peers.get(peer, 0) + 1
                return True
        _refuse(request)
        if self.on_shed is not None:
            self.on_shed(reason)
        return False

    def shutdown_request(self, request: Any) -> None:
        """Close the connection and forget it."""
        with self._lock:
            peer = self._open.pop(id(request), None)
            if peer is not None:
                left = self._peers[peer] - 1
                if left:
                    self._peers[peer] = left
                else:
                    del self._peers[peer]
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed (reset, bad TLS): logged at debug level, no traceback."""
        logger.debug("connection from %s failed", client_address, exc_info=True)


def _refuse(request: Any) -> None:
    """Tell a refused client why, without blocking the accepting thread."""
    if isinstance(request, ssl.SSLSocket):
        return  # no handshake was made: nothing can be said in the clear
    try:
        request.setblocking(False)
        request.send(_REFUSAL)
    except OSError:
        pass


class ByteBudget:
    """Bytes reserved by the bodies being received and processed, up to ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    def reserve(self, size: int) -> bool:
        """Take ``size`` bytes of the budget; False (nothing taken) when they do not fit."""
        with self._lock:
            if self._used + size > self.limit:
                return False
            self._used += size
            return True

    def release(self, size: int) -> None:
        """Give back what ``reserve`` took."""
        with self._lock:
            self._used -= size


class PeerNotices:
    """Logs a warning the first time each sender (by address) is refused for a reason."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._seen: dict[str, None] = {}
        self._lock = threading.Lock()

    def once(self, peer: str, message: str, *args: object) -> bool:
        """Log ``message`` if ``peer`` was not told yet; True when it was logged."""
        with self._lock:
            if peer in self._seen:
                return False
            if len(self._seen) >= MAX_NOTICED_PEERS:
                self._seen.pop(next(iter(self._seen)))
            self._seen[peer] = None
        self._log.warning(message, *args)
        return True


def grpc_peer_address(peer: str) -> str:
    """``ipv4:10.0.0.3:52144`` -> ``10.0.0.3`` (a sender's address without its port)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]").removeprefix("%5B").removesuffix("%5D")
    return rest.rsplit(":", 1)[0] if kind == "ipv4" else peer
