"""The OTLP exporter of the processor: the queue's head, sent with retry and backoff.

One forwarder thread sends the persistent queue's batches in order, one at a
time, over OTLP/gRPC or OTLP/HTTP (protobuf). It never gives up on a batch the
next hop could take later (unreachable, ``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``
with ``RetryInfo``, HTTP 429/502/503/504): it backs off exponentially with jitter, honouring the
server's retry information, and the batch stays on disk meanwhile. A batch the
next hop refuses for good (``INVALID_ARGUMENT``, ``RESOURCE_EXHAUSTED`` without
``RetryInfo``: a size limit, HTTP 400/413) is dropped and
counted as ``downstream_rejected``, with a log line; so are items a partial
success reports as rejected.
"""

from __future__ import annotations

import enum
import gzip
import http.client
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import grpc
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.rpc import error_details_pb2

from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.config import ForwardConfig, RetryConfig
from otel_compaction.processor.queue import Entry, PersistentQueue

logger = logging.getLogger(__name__)

_RETRYABLE_GRPC = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.DATA_LOSS,
        grpc.StatusCode.UNKNOWN,
    }
)
_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})


class Outcome(enum.Enum):
    """What became of one delivery attempt."""

    SENT = "sent"
    RETRY = "retry"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of one attempt; ``retry_after`` is the server's hint, in seconds."""

    outcome: Outcome
    detail: str = ""
    rejected_items: int = 0
    retry_after: float | None = None


class Sender(Protocol):
    """Sends one serialized request; must not raise (failures are results)."""

    def send(self, signal: Signal, data: bytes) -> SendResult:
        """Deliver ``data`` (an ``Export*ServiceRequest``) and say how it went."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class GrpcSender:
    """OTLP/gRPC client sending pre-serialized requests (no re-encoding)."""

    def __init__(self, config: ForwardConfig) -> None:
        endpoint = config.endpoint or ""
        parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
        target = parts.netloc or endpoint
        secure = parts.scheme == "https" or not config.insecure
        options = [("grpc.max_send_message_length", 64 << 20)]
        if secure:
            ca = config.ca_file.read_bytes() if config.ca_file else None
            creds = grpc.ssl_channel_credentials(root_certificates=ca)
            self._channel = grpc.secure_channel(target, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._timeout = config.timeout_seconds
        self._metadata = tuple((k.lower(), v) for k, v in config.headers.items())
        self._compression = grpc.Compression.Gzip if config.compression == "gzip" else None
        self._methods = {
            s: self._channel.unary_unary(
                f"/{s.spec.service}/Export",
                request_serializer=None,
                response_deserializer=s.spec.response.FromString,
            )
            for s in Signal
        }

    def send(self, signal: Signal, data: bytes) -> SendResult:
        """Call ``Export`` once."""
        try:
            response = self._methods[signal](
                data,
                timeout=self._timeout,
                metadata=self._metadata,
                compression=self._compression,
            )
        except grpc.RpcError as err:
            return _grpc_failure(err)
        return _partial(signal, response)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()


def _grpc_failure(err: Any) -> SendResult:
    code = err.code()
    detail = f"{code.name}: {err.details()}"
    if code not in _RETRYABLE_GRPC:
        return SendResult(Outcome.REJECTED, detail)
    retry_after = None
    for key, value in err.trailing_metadata() or ():
        if key == "google.rpc.retryinfo-bin":
            info = error_details_pb2.RetryInfo.FromString(value)
            retry_after = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED and retry_after is None:
        # The OTLP specification: retried only with RetryInfo. Without it, it is a size
        # limit (gRPC's max_recv_msg_size): the same batch would be refused forever.
        return SendResult(Outcome.REJECTED, detail)
    return SendResult(Outcome.RETRY, detail, retry_after=retry_after)


def _partial(signal: Signal, response: Any) -> SendResult:
    partial = response.partial_success
    rejected = int(getattr(partial, signal.spec.partial_field, 0))
    return SendResult(Outcome.SENT, partial.error_message, rejected_items=rejected)


class HttpSender:
    """OTLP/HTTP (protobuf) client over one kept-alive connection."""

    def __init__(self, config: ForwardConfig) -> None:
        parts = urlsplit(config.endpoint or "")
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        self._timeout = config.timeout_seconds
        self._headers = dict(config.headers)
        self._gzip = config.compression == "gzip"
        self._context = None
        if self._https:
            cafile = str(config.ca_file) if config.ca_file else None
            self._context = ssl.create_default_context(cafile=cafile)
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._context
                )
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
        return self._conn

    def send(self, signal: Signal, data: bytes) -> SendResult:
        """POST the request once."""
        headers = {"Content-Type": "application/x-protobuf", **self._headers}
        if self._gzip:
            data = gzip.compress(data)
            headers["Content-Encoding"] = "gzip"
        try:
            conn = self._connection()
            conn.request("POST", self._base + signal.spec.path, body=data, headers=headers)
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            return SendResult(Outcome.RETRY, f"{type(exc).__name__}: {exc}")
        return _http_result(signal, response.status, response.getheader("Retry-After"), body)

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _http_result(signal: Signal, status: int, retry_after: str | None, body: bytes) -> SendResult:
    if status == 200:
        try:
            return _partial(signal, signal.spec.response.FromString(body))
        except ProtobufDecodeError:  # an unreadable success body is still a success
            return SendResult(Outcome.SENT)
    detail = f"HTTP {status}: {body[:200]!r}"
    if status in _RETRYABLE_HTTP:
        after = float(retry_after) if retry_after and retry_after.isdigit() else None
        return SendResult(Outcome.RETRY, detail, retry_after=after)
    return SendResult(Outcome.REJECTED, detail)


def make_sender(config: ForwardConfig) -> Sender:
    """The sender for the configured protocol."""
    if config.protocol == "grpc":
        return GrpcSender(config)
    return HttpSender(config)


class Backoff:
    """Exponential backoff with ±20% jitter, capped; reset after a success."""

    def __init__(self, config: RetryConfig) -> None:
        self._config = config
        self._attempt = 0

    def next_delay(self, hint: float | None = None) -> float:
        """Seconds to wait before the next attempt."""
        cfg = self._config
        delay = cfg.initial_interval_seconds * cfg.multiplier**self._attempt
        self._attempt += 1
        delay = min(delay, cfg.max_interval_seconds) * random.uniform(0.8, 1.2)
        if hint is not None:
            delay = max(delay, min(hint, cfg.max_interval_seconds))
        return float(delay)

    def reset(self) -> None:
        """Start again from the initial interval."""
        self._attempt = 0


ForwardListener = Callable[[Entry, SendResult], None]


class Forwarder:
    """Sends the queue's head until it is delivered; one batch in flight, in order.

    Args:
        queue: the persistent queue.
        sender: the OTLP client.
        retry: the backoff settings.
        on_result: told about every final result (sent or rejected) for metrics.
    """

    def __init__(
        self,
        queue: PersistentQueue,
        sender: Sender,
        retry: RetryConfig,
        on_result: ForwardListener | None = None,
    ) -> None:
        self._queue = queue
        self._sender = sender
        self._backoff = Backoff(retry)
        self._on_result = on_result
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otlp-forwarder", daemon=True)
        self.last_error: str | None = None

    def start(self) -> None:
        """Start the sending thread."""
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            head = self._queue.head(timeout=0.2)
            if head is None:
                continue
            entry, data = head
            result = self._sender.send(entry.signal, data)
            if result.outcome is Outcome.RETRY:
                self.last_error = result.detail
                delay = self._backoff.next_delay(result.retry_after)
                logger.warning("next hop: %s; retrying in %.1f s", result.detail, delay)
                self._stop.wait(delay)
                continue
            if result.outcome is Outcome.REJECTED:
                logger.error("next hop refused batch %d for good: %s", entry.seq, result.detail)
            self.last_error = None
            self._backoff.reset()
            self._queue.remove(entry.seq)
            if self._on_result is not None:
                self._on_result(entry, result)

    def stop(self, drain_timeout: float) -> bool:
        """Send what is queued for up to ``drain_timeout`` s, then stop; True if emptied."""
        deadline = time.monotonic() + drain_timeout
        emptied = self._queue.wait_empty(drain_timeout)
        self._stop.set()
        self._queue.wake()
        self._thread.join(max(0.0, deadline - time.monotonic()) + 1.0)
        self._sender.close()
        return emptied
