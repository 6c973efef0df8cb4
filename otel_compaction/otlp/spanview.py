"""Read-only views of an OTLP trace request: span attributes as a map, spans as bytes.

OTLP's ``KeyValue`` (``key = 1``, ``value = 2``) has exactly the wire form of a
protobuf map entry, so the bytes of an ``ExportTraceServiceRequest`` also parse
as a message whose ``Span.attributes`` is ``map<string, bytes>``: each value is
the ``AnyValue`` still encoded. The processor reads five to fifteen of the
about 25 attributes of an inference span; through the map each is one lookup
done by the protobuf runtime, and only its value's few bytes become a Python
object (``otlp.extract`` decodes them), instead of a Python loop that
builds a wrapper object for every ``KeyValue`` of every span (about 0.15 µs
each). Parsing this view costs about as much as parsing the request.

Only the fields the processor reads are declared (the parser skips the rest);
the view is never serialised or modified. A key repeated on one span resolves
as a ``dict`` of the ``KeyValue`` list would: the last one wins. The messages
live in a private descriptor pool, so nothing here can clash with the
generated OTLP classes.

``splice_spans`` is the enrich output's shortcut: a second view holds every
span as its bytes (everything else is kept as unknown fields), so the few spans
that got flags are re-encoded and the rest of the request is copied as it came,
instead of serialising the whole request again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "otel_compaction.spanview"

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# (message, [(field, number, type, label, message type or "")]), numbers as in
# opentelemetry/proto/trace/v1/trace.proto and collector/trace/v1/trace_service.proto.
_Messages = tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...]], ...]
_MESSAGES: _Messages = (
    (
        "Span",
        (
            ("trace_id", 1, _F.TYPE_BYTES, _OPTIONAL, ""),
            ("span_id", 2, _F.TYPE_BYTES, _OPTIONAL, ""),
            ("parent_span_id", 4, _F.TYPE_BYTES, _OPTIONAL, ""),
            ("name", 5, _F.TYPE_STRING, _OPTIONAL, ""),
            ("start_time_unix_nano", 7, _F.TYPE_FIXED64, _OPTIONAL, ""),
            ("attributes", 9, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.Span.AttributesEntry"),
        ),
    ),
    ("ScopeSpans", (("spans", 2, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.Span"),)),
    (
        "Resource",
        (("attributes", 1, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.Resource.AttributesEntry"),),
    ),
    (
        "ResourceSpans",
        (
            ("resource", 1, _F.TYPE_MESSAGE, _OPTIONAL, f".{_PACKAGE}.Resource"),
            ("scope_spans", 2, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.ScopeSpans"),
        ),
    ),
    ("Request", (("resource_spans", 1, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.ResourceSpans"),)),
)
# The splicing view: a span is its bytes; every other field is an unknown field,
# which protobuf keeps and writes back as it came.
_RAW_MESSAGES: _Messages = (
    ("RawScopeSpans", (("spans", 2, _F.TYPE_BYTES, _REPEATED, ""),)),
    (
        "RawResourceSpans",
        (("scope_spans", 2, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.RawScopeSpans"),),
    ),
    (
        "RawRequest",
        (("resource_spans", 1, _F.TYPE_MESSAGE, _REPEATED, f".{_PACKAGE}.RawResourceSpans"),),
    ),
)


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="otel_compaction/spanview.proto",
        package=_PACKAGE,
        syntax="proto3",
    )
    for name, fields in _MESSAGES + _RAW_MESSAGES:
        message = proto.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            added = message.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name
    for index in (0, 2):  # Span and Resource: their attributes as maps
        entry = proto.message_type[index].nested_type.add(name="AttributesEntry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_OPTIONAL)
        # The value stays encoded: an ``AnyValue``'s bytes, decoded by the reader.
        entry.field.add(name="value", number=2, type=_F.TYPE_BYTES, label=_OPTIONAL)
    return proto


def _classes() -> tuple[Any, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())

    def message(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))

    return message("Request"), message("RawRequest")


_REQUEST, _RAW_REQUEST = _classes()


def parse_trace_view(data: bytes) -> Any:
    """The view of a serialised ``ExportTraceServiceRequest`` (already validated by a real parse).

    ``view.resource_spans[i].scope_spans[j].spans[k]`` is the span at the same
    place in the request, with ``trace_id``, ``span_id``, ``parent_span_id``, ``name``,
    ``start_time_unix_nano`` and ``attributes`` (a mapping from key to the
    serialised ``AnyValue``: ``attributes.get(key)`` and ``key in attributes``);
    ``view.resource_spans[i].resource.attributes`` is the resource's, the same way.
    """
    return _REQUEST.FromString(data)


Position = tuple[int, int, int]


def splice_spans(data: bytes, spans: Mapping[Position, bytes]) -> bytes:
    """``data`` (a serialised request) with the spans at ``spans``' positions replaced.

    A position is ``(resource_spans, scope_spans, spans)`` indexes, as in the
    view; the value is the new span, serialised. Everything else is copied as it
    came (fields the view does not declare may come out after those it does:
    the same message to any protobuf parser).
    """
    request = _RAW_REQUEST.FromString(data)
    for (i, j, k), span in spans.items():
        request.resource_spans[i].scope_spans[j].spans[k] = span
    out: bytes = request.SerializeToString()
    return out
