"""The map view of a trace request reads spans exactly as their KeyValue lists do."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_compaction import semconv as sc
from otel_compaction.otlp.attributes import key_values
from otel_compaction.otlp.extract import Item, span_to_item, spans_to_items
from otel_compaction.otlp.spanview import parse_trace_view

KEYS = st.sampled_from(
    [
        sc.CONVERSATION_ID,
        sc.GEN_AI_CONVERSATION_ID,
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_REQUEST_MODEL,
        sc.TURN_INDEX,
        sc.CONTEXT_TOKENS,
        sc.CONTEXT_WINDOW,
        sc.TOOL_CALLS,
        sc.TOOL_OUTPUT_TOKENS,
        sc.TOOL_CATEGORIES,
        sc.PHASE_NAME,
        sc.PHASE_SOURCE,
        sc.PHASE_NAMES,
        sc.PHASE_DISTRIBUTION,
        sc.COMPACTION_SOURCE,
        sc.COMPACTION_ID,
        sc.TOKENS_BEFORE,
        sc.SUMMARY_FAILED,
        sc.FLAG_REASON,
        "http.request.method",
    ]
)
SCALARS = st.one_of(
    st.sampled_from(["", "chat", "reported", "12", "read", "explicit", "x" * 70]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3))
NAMES = st.sampled_from(["chat m", sc.SPAN_COMPACTION, sc.SPAN_FINDING, "execute_tool t"])


@st.composite
def spans(draw: st.DrawFn) -> Span:
    """A span with up to 10 attributes of any type, keys repeated at times."""
    span = Span(
        trace_id=draw(st.sampled_from([b"", bytes(range(16))])),
        span_id=draw(st.binary(min_size=8, max_size=8)),
        name=draw(NAMES),
        start_time_unix_nano=draw(st.integers(min_value=0, max_value=2**63)),
    )
    for key, value in draw(st.lists(st.tuples(KEYS, VALUES), max_size=10)):
        span.attributes.extend(key_values({key: value}))
    if draw(st.booleans()):
        span.attributes.append(KeyValue(key=sc.CONTEXT_TOKENS, value=AnyValue()))
    return span


def _fields(item: Item | None) -> dict[str, Any] | None:
    if item is None:
        return None
    out = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    del out["target"], out["position"], out["batch"]
    return out


@settings(max_examples=300)
@given(st.lists(spans(), max_size=8))
def test_the_view_reads_every_span_as_its_keyvalue_list(batch: list[Span]) -> None:
    """spans_to_items (map lookups) gives the items span_to_item gives, in order."""
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.extend(batch)
    expected = [_fields(span_to_item(span)) for span in batch]
    got = [_fields(item) for item in spans_to_items(request)]
    assert got == [fields for fields in expected if fields is not None]


def test_targets_are_the_requests_own_spans() -> None:
    """An item's target is the span inside the request, so flags written on it are forwarded."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.spans.add(name="execute_tool t")
    scope.spans.add(name="chat m").attributes.extend(key_values({sc.CONTEXT_TOKENS: 5}))
    (item,) = spans_to_items(request)
    item.target.attributes.extend(key_values({"flag": True}))
    assert request.resource_spans[0].scope_spans[0].spans[1].attributes[-1].key == "flag"
    (untargeted,) = spans_to_items(request, targets=False)
    assert untargeted.target is None


def test_a_repeated_key_resolves_to_its_last_value() -> None:
    """As in a dict built from the KeyValue list, the last of two equal keys wins."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(name="chat m")
    span.attributes.extend(key_values({sc.CONTEXT_TOKENS: 5}))
    span.attributes.extend(key_values({sc.CONTEXT_TOKENS: 9}))
    view = parse_trace_view(request.SerializeToString())
    raw = view.resource_spans[0].scope_spans[0].spans[0].attributes[sc.CONTEXT_TOKENS]
    assert AnyValue.FromString(raw).int_value == 9
    (item,) = spans_to_items(request)
    assert item.turn is not None
    assert item.turn.context_tokens == 9
