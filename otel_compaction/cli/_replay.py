"""``import`` of OTLP/JSON trace files: each request sent on as it is (a replay), over OTLP.

A file the Collector's file exporter wrote (or ``import --out``, or the demo) is
already spans: there is nothing to convert, so its requests go to the endpoint
unchanged, one OTLP export per line. A request the endpoint refuses, or a part
of one it rejects (OTLP partial success), counts as spans not exported.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_compaction.transcripts import Diagnostics, Progress
from otel_compaction.transcripts.otlp import read_otlp_requests

logger = logging.getLogger(__name__)

Send = Callable[[Message], int]
"""Sends one request; returns how many of its spans were not accepted."""


def span_count(request: Any) -> int:
    """The spans of one ``ExportTraceServiceRequest``."""
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def replay_file(
    path: Path, send: Send, diagnostics: Diagnostics, progress: Progress | None = None
) -> tuple[int, int]:
    """Send every request of an OTLP/JSON file; returns (spans accepted, spans not accepted)."""
    sent = failed = 0
    for request in read_otlp_requests(path, diagnostics, progress):
        spans = span_count(request)
        rejected = min(send(request), spans)
        sent += spans - rejected
        failed += rejected
    return sent, failed


class HttpSend:
    """POSTs requests as protobuf to an OTLP/HTTP traces URL."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout = url, timeout

    def __call__(self, request: Message) -> int:
        body = request.SerializeToString()
        post = urllib.request.Request(  # noqa: S310 - the user's endpoint; http(s) checked
            self.url, data=body, method="POST", headers={"Content-Type": "application/x-protobuf"}
        )
        try:
            with urllib.request.urlopen(post, timeout=self.timeout) as answer:  # noqa: S310
                response = ExportTraceServiceResponse.FromString(answer.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            logger.warning("replay to %s failed: %s", self.url, exc)
            return span_count(request)
        return int(response.partial_success.rejected_spans)


class GrpcSend:
    """Calls ``TraceService/Export`` on an OTLP/gRPC endpoint."""

    def __init__(self, endpoint: str, timeout: float) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
            TraceServiceStub,
        )

        parts = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}")
        target = parts.netloc or endpoint
        if parts.scheme == "https":
            self._channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
        else:
            self._channel = grpc.insecure_channel(target)
        self._stub = TraceServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._errors: tuple[type[Exception], ...] = (grpc.RpcError,)
        self.endpoint, self.timeout = endpoint, timeout

    def __call__(self, request: Message) -> int:
        try:
            response = self._stub.Export(request, timeout=self.timeout)
        except self._errors as exc:
            logger.warning("replay to %s failed: %s", self.endpoint, exc)
            return span_count(request)
        return int(response.partial_success.rejected_spans)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()
