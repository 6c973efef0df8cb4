"""OTLP payloads in and out: protobuf and JSON, gzip, with clear errors.

Everything a receiver needs to turn a request body into an
``Export*ServiceRequest`` and a result into a response body:

* ``decompress`` reads every gzip member and bounds their output together (a
  1 KiB bomb cannot grow past the limit);
* ``decode_request`` parses protobuf or OTLP/JSON, where trace and span ids
  are hex strings (protobuf's own JSON mapping would read them as base64);
  ``decode_body`` also returns the protobuf bytes, which the pipeline writes
  ahead and forwards as they came;
* ``encode_json`` writes OTLP/JSON with hex ids (golden files, tests);
* every failure is a ``DecodeError`` with the HTTP status to answer and a
  reason a human can act on.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs_pb
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb

from otel_compaction.semconv import ProcessorSignal

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# OTLP/JSON keys whose values are hex-encoded bytes (and their proto field names).
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})
_ID_LENGTHS = {"traceId": 16, "trace_id": 16}  # every other id is 8 bytes


@dataclass(frozen=True, slots=True)
class SignalSpec:
    """One OTLP signal: its HTTP path, gRPC service and message types."""

    name: str
    path: str
    service: str
    request: type[Message]
    response: type[Message]
    partial_field: str


class Signal(enum.Enum):
    """The three OTLP signals the receivers accept."""

    TRACES = SignalSpec(
        ProcessorSignal.TRACES,
        "/v1/traces",
        "opentelemetry.proto.collector.trace.v1.TraceService",
        trace_pb.ExportTraceServiceRequest,
        trace_pb.ExportTraceServiceResponse,
        "rejected_spans",
    )
    METRICS = SignalSpec(
        ProcessorSignal.METRICS,
        "/v1/metrics",
        "opentelemetry.proto.collector.metrics.v1.MetricsService",
        metrics_pb.ExportMetricsServiceRequest,
        metrics_pb.ExportMetricsServiceResponse,
        "rejected_data_points",
    )
    LOGS = SignalSpec(
        ProcessorSignal.LOGS,
        "/v1/logs",
        "opentelemetry.proto.collector.logs.v1.LogsService",
        logs_pb.ExportLogsServiceRequest,
        logs_pb.ExportLogsServiceResponse,
        "rejected_log_records",
    )

    @property
    def spec(self) -> SignalSpec:
        """The signal's paths and message types."""
        value: SignalSpec = self.value
        return value

    @classmethod
    def from_path(cls, path: str) -> Signal | None:
        """The signal served at an HTTP path, if any."""
        for signal in cls:
            if signal.spec.path == path:
                return signal
        return None


class DecodeError(ValueError):
    """A request body the receiver refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def media_type(content_type: str | None) -> str:
    """The bare media type of a ``Content-Type`` header, lower-cased."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo ``Content-Encoding`` (``gzip`` or none), never producing more than ``limit`` bytes.

    A gzip body may hold several members (``cat a.gz b.gz``): all are read, as
    ``gzip -d`` does, and ``limit`` bounds them together. Bytes after the last
    member (or after a deflate stream) that are no further member are refused.
    """
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        return body
    if enc not in ("gzip", "x-gzip", "deflate"):
        raise DecodeError(415, f"unsupported Content-Encoding {encoding!r}: use gzip or none")
    gzipped = enc != "deflate"
    wbits = 16 + zlib.MAX_WBITS if gzipped else zlib.MAX_WBITS
    out = bytearray()
    rest = body
    while True:
        rest = _inflate_member(rest, zlib.decompressobj(wbits), out, enc, limit)
        if not rest:
            return bytes(out)
        if not gzipped or not rest.startswith(_GZIP_MAGIC):
            raise DecodeError(400, f"{len(rest)} bytes after the {enc} stream are not {enc}")


_GZIP_MAGIC = b"\x1f\x8b"


def _inflate_member(data: bytes, inflater: Any, out: bytearray, enc: str, limit: int) -> bytes:
    """Inflate one member of ``data`` onto ``out``; return the bytes after it."""
    try:
        out += inflater.decompress(data, limit + 1 - len(out))
    except zlib.error as exc:
        raise DecodeError(400, f"body is not valid {enc}: {exc}") from None
    if len(out) > limit:
        raise DecodeError(413, f"decompressed body exceeds the limit of {limit} bytes")
    if not inflater.eof:
        raise DecodeError(400, f"{enc} body is truncated")
    rest: bytes = inflater.unused_data
    return rest


def decode_request(
    signal: Signal, body: bytes, content_type: str | None, encoding: str | None, limit: int
) -> Message:
    """Parse one OTLP/HTTP request body into the signal's request message."""
    return decode_body(signal, body, content_type, encoding, limit)[0]


def decode_body(
    signal: Signal, body: bytes, content_type: str | None, encoding: str | None, limit: int
) -> tuple[Message, bytes | None]:
    """``decode_request``, and the protobuf it parsed (None for JSON), to pass on as it came."""
    if len(body) > limit:
        raise DecodeError(413, f"body of {len(body)} bytes exceeds the limit of {limit} bytes")
    data = decompress(body, encoding, limit)
    kind = media_type(content_type)
    if kind == PROTOBUF:
        return parse_protobuf(signal, data), data
    if kind == JSON:
        return parse_json(signal, data), None
    raise DecodeError(415, f"unsupported Content-Type {content_type!r}: use {PROTOBUF} or {JSON}")


def parse_protobuf(signal: Signal, data: bytes) -> Message:
    """Parse a binary protobuf request."""
    try:
        return signal.spec.request.FromString(data)
    except (ProtobufDecodeError, RecursionError, ValueError) as exc:
        raise DecodeError(
            400, f"malformed protobuf {signal.spec.request.__name__}: {exc}"
        ) from None


def parse_json(signal: Signal, data: bytes) -> Message:
    """Parse an OTLP/JSON request (ids in hex, unknown fields ignored as OTLP requires)."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DecodeError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise DecodeError(400, "OTLP/JSON body must be a JSON object")
    try:
        _rewrite_ids(document, _hex_to_base64)
        message = signal.spec.request()
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except DecodeError:
        raise
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(400, f"invalid OTLP/JSON {signal.spec.request.__name__}: {exc}") from None
    return message


def _rewrite_ids(node: Any, convert: Callable[[str, str], str]) -> None:
    """Replace, in place, every id value of the document with ``convert(key, value)``."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _ID_KEYS and isinstance(value, str):
                    item[key] = convert(key, value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))


def _hex_to_base64(key: str, value: str) -> str:
    if value == "":
        return ""
    size = _ID_LENGTHS.get(key, 8)
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise DecodeError(400, f"{key} must be hex (OTLP/JSON), got {value[:40]!r}") from None
    if len(raw) != size:
        raise DecodeError(400, f"{key} must be {size * 2} hex digits, got {len(value)}")
    return base64.b64encode(raw).decode("ascii")


def encode_json(message: Message) -> dict[str, Any]:
    """A message as an OTLP/JSON document (hex ids, camelCase keys, enums as integers).

    The OTLP/JSON encoding requires integer enum values (``"kind": 3``, not
    ``"SPAN_KIND_CLIENT"``); some consumers reject the names.
    """
    document: dict[str, Any] = json_format.MessageToDict(message, use_integers_for_enums=True)
    _rewrite_ids(document, _base64_to_hex)
    return document


def _base64_to_hex(key: str, value: str) -> str:
    """An id as OTLP/JSON writes it (hex); a value that is not base64 stays as it is."""
    try:
        return base64.b64decode(value).hex()
    except binascii.Error:
        return value


def encode_response(signal: Signal, kind: str, rejected: int = 0, message: str = "") -> bytes:
    """The success response (with partial success when items were rejected)."""
    response = signal.spec.response()
    if rejected or message:
        partial = response.partial_success
        setattr(partial, signal.spec.partial_field, rejected)
        partial.error_message = message
    if kind == JSON:
        return json.dumps(encode_json(response)).encode()
    return bytes(response.SerializeToString())


def encode_status(kind: str, code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` body for an error response, in the request's encoding."""
    if kind == JSON:
        return json.dumps({"code": code, "message": message}).encode()
    return bytes(status_pb2.Status(code=code, message=message).SerializeToString())


def item_count(signal: Signal, request: Message) -> int:
    """Spans, data points or log records in a request."""
    if signal is Signal.TRACES:
        return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    if signal is Signal.LOGS:
        return sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
    return _data_points(request)


def _data_points(request: Message) -> int:
    total = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                total += len(getattr(metric, kind).data_points) if kind else 0
    return total
