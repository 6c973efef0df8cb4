"""The OTLP/gRPC receiver: ``TraceService``, ``MetricsService`` and ``LogsService`` ``Export``.

Requests are taken as bytes and parsed here, so a malformed message gets
``INVALID_ARGUMENT`` with the parser's reason instead of gRPC's generic
deserialization error. Back-pressure is ``RESOURCE_EXHAUSTED`` with a
``google.rpc.RetryInfo`` in the trailers (both the ``grpc-status-details-bin``
status and the ``google.rpc.retryinfo-bin`` key the OTel SDK exporters read),
which OTLP clients treat as "retry later"; a forwarding queue that cannot be
written (a full disk), or any other failure of the processor's own, is
``UNAVAILABLE`` with the same ``RetryInfo`` (never ``UNKNOWN``, which the OTLP
specification does not retry). gRPC applies the size limit itself
(``grpc.max_receive_message_length``, checked after decompression) and answers
``RESOURCE_EXHAUSTED`` without handing the message over; ``Export`` is served
as a client-streaming method (the same frames on the wire as a unary call) so
that such a call still reaches the handler, with no message, and is counted
as ``too_large``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from otel_compaction.otlp.decode import DecodeError, Signal, parse_protobuf
from otel_compaction.processor.connections import PeerNotices, grpc_peer_address
from otel_compaction.processor.pipeline import Overloaded, Pipeline, Unavailable
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason, ProcessorTransport

logger = logging.getLogger(__name__)

TRANSPORT = ProcessorTransport.GRPC
RETRY_SECONDS = 5
"""The retry delay told to a sender whose request the processor failed on."""


class GrpcReceiver:
    """An OTLP/gRPC server feeding a pipeline.

    Args:
        pipeline: where accepted requests go.
        endpoint: ``HOST:PORT`` to listen on (port 0 picks a free port).
        max_request_bytes: the receive limit.
        workers: handler threads.
        token: the bearer token every request must carry, if any.
        credentials: server TLS credentials, if any.
        metrics: rejection counters.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        endpoint: str,
        *,
        max_request_bytes: int,
        workers: int = 16,
        token: str | None = None,
        credentials: grpc.ServerCredentials | None = None,
        metrics: ProcessorMetrics | None = None,
    ) -> None:
        self._pipeline = pipeline
        self._token = token
        self._metrics = metrics
        self._limit = max_request_bytes
        self._notices = PeerNotices(logger)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otlp-grpc"),
            options=[
                ("grpc.max_receive_message_length", max_request_bytes),
                ("grpc.so_reuseport", 0),
            ],
            maximum_concurrent_rpcs=workers * 4,
        )
        self._server.add_generic_rpc_handlers([self._handlers(s) for s in Signal])
        if credentials is None:
            self.port = self._server.add_insecure_port(endpoint)
        else:
            self.port = self._server.add_secure_port(endpoint, credentials)
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {endpoint}")

    def _handlers(self, signal: Signal) -> grpc.GenericRpcHandler:
        handler = grpc.stream_unary_rpc_method_handler(
            self._export(signal), request_deserializer=None, response_serializer=None
        )
        return grpc.method_handlers_generic_handler(signal.spec.service, {"Export": handler})

    def _export(self, signal: Signal) -> Callable[[Iterator[bytes], Any], bytes]:
        def export(messages: Iterator[bytes], context: Any) -> bytes:
            data = _first(messages)
            if data is None:
                # gRPC refused the message (over max_receive_message_length) and has
                # answered RESOURCE_EXHAUSTED itself; a unary client makes no call
                # without a message.
                self._reject(signal, ProcessorReason.TOO_LARGE)
                # gRPC has ended the call: its peer may be gone (then one notice for all).
                peer = grpc_peer_address(context.peer() or "") or "a sender gRPC did not name"
                self._notices.once(
                    peer,
                    "refused a %s request from %s over receivers.max_request_bytes (%d): the "
                    "sender drops such batches; bound its batches in bytes (docs/processor.md, "
                    "Batch size) or raise the limit",
                    signal.spec.name, peer, self._limit,
                )  # fmt: skip
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "no request message")
                return b""  # not reached: abort raises
            return self._handle(signal, data, context)

        return export

    def _handle(self, signal: Signal, data: bytes, context: Any) -> bytes:
        if not self._authorized(context):
            self._reject(signal, ProcessorReason.UNAUTHENTICATED)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            request = parse_protobuf(signal, data)
            self._pipeline.submit(signal, request, TRANSPORT, data)
        except DecodeError as exc:
            self._reject(signal, ProcessorReason.MALFORMED)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.reason)
        except Unavailable as exc:
            self._retry_later(signal, context, exc, grpc.StatusCode.UNAVAILABLE)
        except Overloaded as exc:
            self._retry_later(signal, context, exc, grpc.StatusCode.RESOURCE_EXHAUSTED)
        except Exception:  # a fault of ours, not of the request: "retry later", never UNKNOWN
            logger.exception("cannot accept a %s request", signal.spec.name)
            failure = Unavailable("the processor failed on this request", RETRY_SECONDS)
            failure.cause = ProcessorReason.ANALYSIS_ERROR
            self._retry_later(signal, context, failure, grpc.StatusCode.UNAVAILABLE)
        return bytes(signal.spec.response().SerializeToString())

    def _retry_later(
        self, signal: Signal, context: Any, exc: Overloaded, code: grpc.StatusCode
    ) -> None:
        self._reject(signal, exc.cause)
        context.set_trailing_metadata(retry_trailers(exc.reason, exc.retry_after, code))
        context.abort(code, exc.reason)

    def _authorized(self, context: Any) -> bool:
        if self._token is None:
            return True
        for key, value in context.invocation_metadata():
            if key == "authorization" and isinstance(value, str):
                scheme, _, presented = value.partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(
                    presented.strip().encode(), self._token.encode()
                )
        return False

    def _reject(self, signal: Signal, reason: ProcessorReason) -> None:
        if self._metrics is not None:
            self._metrics.rejected(signal, reason, 1)

    def start(self) -> None:
        """Start serving."""
        self._server.start()

    def stop(self, grace: float) -> None:
        """Stop accepting; let in-flight calls finish for up to ``grace`` seconds."""
        self._server.stop(grace).wait(grace + 1.0)


def _first(messages: Iterator[bytes]) -> bytes | None:
    """The call's one request message; None when gRPC did not hand one over."""
    try:
        return next(messages, None)
    except grpc.RpcError:  # the call ended before a message arrived (refused as too large)
        return None


def retry_trailers(
    message: str, retry_after: int, code: grpc.StatusCode = grpc.StatusCode.RESOURCE_EXHAUSTED
) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata telling an OTLP client to retry after ``retry_after`` seconds."""
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=retry_after))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


def server_credentials(
    cert: bytes, key: bytes, client_ca: bytes | None = None
) -> grpc.ServerCredentials:
    """TLS credentials; with ``client_ca`` every client must present a certificate."""
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )
