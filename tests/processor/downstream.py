"""A fake next hop: an OTLP/gRPC server that records what it is sent, and can be down."""

from __future__ import annotations

import socket
import threading
from concurrent import futures
from typing import Any

import grpc

from otel_compaction.otlp.decode import Signal


def free_port() -> int:
    """A port nothing listens on right now (for a server started later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Downstream:
    """Records every ``Export`` it receives; ``start``/``stop`` simulate an outage."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[tuple[Signal, Any]] = []
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None

    def start(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handlers = []
        for signal in Signal:
            handler = grpc.unary_unary_rpc_method_handler(
                self._export(signal),
                request_deserializer=signal.spec.request.FromString,
                response_serializer=lambda r: r.SerializeToString(),
            )
            handlers.append(
                grpc.method_handlers_generic_handler(signal.spec.service, {"Export": handler})
            )
        server.add_generic_rpc_handlers(handlers)
        assert server.add_insecure_port(f"127.0.0.1:{self.port}") == self.port
        server.start()
        self._server = server

    def _export(self, signal: Signal) -> Any:
        def export(request: Any, context: Any) -> Any:
            with self._lock:
                self.received.append((signal, request))
            return signal.spec.response()

        return export

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait()
            self._server = None

    def spans(self) -> list[Any]:
        """Every span received, in arrival order."""
        with self._lock:
            return [
                span
                for signal, request in self.received
                if signal is Signal.TRACES
                for rs in request.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]
