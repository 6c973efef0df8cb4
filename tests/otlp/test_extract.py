"""From spans and log records to engine inputs: what counts as a turn, a compaction, a key."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_compaction import semconv as sc
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.attributes import key_values
from otel_compaction.otlp.extract import ItemKind, span_to_item
from otel_compaction.semconv import CompactionSource

TRACE = bytes(range(16))


def _span(name: str, **attrs: Any) -> Span:
    span = Span(trace_id=TRACE, span_id=b"\x01" * 8, name=name, start_time_unix_nano=5)
    span.attributes.extend(key_values({k.replace("__", "."): v for k, v in attrs.items()}))
    return span


def _attrs(**attrs: Any) -> Span:
    span = Span(trace_id=TRACE, span_id=b"\x01" * 8, name="chat m", start_time_unix_nano=5)
    span.attributes.extend(key_values(attrs))
    return span


def test_our_inference_span_is_a_turn_with_its_raw_inputs() -> None:
    """Context tokens, model, new content, tool calls and tool outputs come from the span."""
    span = _attrs(**{sc.CONVERSATION_ID: "c", sc.TURN_INDEX: 3, sc.CONTEXT_TOKENS: 9000,
                     sc.GEN_AI_REQUEST_MODEL: "m", sc.CONTEXT_NEW_CONTENT_TOKENS: 700,
                     sc.TOOL_CALLS: ["read_file"], sc.TOOL_OUTPUT_TOKENS: [100, 200]})  # fmt: skip
    item = span_to_item(span)
    assert item is not None
    assert item.turn is not None
    assert (item.conversation_id, item.turn_index, item.kind) == ("c", 3, ItemKind.TURN)
    assert item.turn.context_tokens == 9000
    assert item.turn.new_content_tokens == 700
    assert item.turn.tool_calls == ("read_file",)
    assert item.turn.tool_output_tokens == (100, 200)


def test_a_foreign_genai_span_is_keyed_by_its_conversation_then_its_trace() -> None:
    """Without our id, gen_ai.conversation.id is the key; without that, the trace id."""
    with_id = _attrs(**{sc.GEN_AI_CONVERSATION_ID: "g", sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
                        sc.GEN_AI_OPERATION_NAME: "chat"})  # fmt: skip
    without = _attrs(**{sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_OPERATION_NAME: "chat"})
    first, second = span_to_item(with_id), span_to_item(without)
    assert first is not None
    assert first.conversation_id == "g"
    assert second is not None
    assert second.conversation_id == TRACE.hex()


def test_spans_that_are_not_turns_are_ignored() -> None:
    """Agent, tool, HTTP spans and our own finding spans are not engine inputs."""
    assert span_to_item(_attrs(**{sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                                  sc.GEN_AI_USAGE_INPUT_TOKENS: 5})) is None  # fmt: skip
    assert span_to_item(_attrs(**{"http.request.method": "GET"})) is None
    finding = _span(sc.SPAN_FINDING, **{sc.CONVERSATION_ID.replace(".", "__"): "c"})
    assert span_to_item(finding) is None


def test_a_compaction_span_keeps_the_agents_lineage_facts() -> None:
    """Source, sizes, id and lineage (parent, generation) map to the observation."""
    span = _attrs(**{sc.CONVERSATION_ID: "c", sc.COMPACTION_SOURCE: "anthropic",
                     sc.COMPACTION_ID: "k2", sc.TOKENS_BEFORE: 150_000, sc.TOKENS_AFTER: 30_000,
                     sc.LINEAGE_PARENT_ID: "k1", sc.LINEAGE_GENERATION: 1,
                     sc.SUMMARY_FAILED: True})  # fmt: skip
    item = span_to_item(span)
    assert item is not None
    assert item.compaction is not None
    obs = item.compaction
    assert obs.source is CompactionSource.ANTHROPIC
    assert (obs.compaction_id, obs.parent_id, obs.continues_lineage) == ("k2", "k1", True)
    # The agent's size after is the first call's context: the processor's too.
    assert (obs.tokens_before, obs.context_after, obs.failed) == (150_000, 30_000, True)


def test_a_reported_phase_carries_its_distribution() -> None:
    """Reported phase, names and probabilities become a ``PhaseReport``; inferred ones do not."""
    base = {sc.CONVERSATION_ID: "c", sc.TURN_INDEX: 1, sc.CONTEXT_TOKENS: 1, sc.PHASE_NAME: "patch",
            sc.PHASE_CONFIDENCE: 0.6, sc.PHASE_NAMES: ["patch", "verify"],
            sc.PHASE_DISTRIBUTION: [0.6, 0.4]}  # fmt: skip
    reported = span_to_item(_attrs(**base, **{sc.PHASE_SOURCE: "reported"}))
    inferred = span_to_item(_attrs(**base, **{sc.PHASE_SOURCE: "inferred"}))
    assert reported is not None
    assert reported.phase is not None
    assert reported.phase.distribution == {"patch": 0.6, "verify": 0.4}
    assert inferred is not None
    assert inferred.phase is None


def test_odd_attribute_types_are_coerced_not_fatal() -> None:
    """Numbers sent as strings or doubles are read; garbage reads as absent."""
    span = _attrs(**{sc.CONVERSATION_ID: "c", sc.CONTEXT_TOKENS: "12000", sc.TURN_INDEX: 4.0,
                     sc.COMPACTION_MODE: "nonsense", sc.TOOL_OUTPUT_TOKENS: ["x", 3]})  # fmt: skip
    item = span_to_item(span)
    assert item is not None
    assert item.turn_index == 4


def _log(name: str, attrs: dict[str, str], time_ns: int) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.time_unix_nano = time_ns
    record.event_name = name
    for key, value in attrs.items():
        record.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    return request


def test_claude_code_events_are_turns_and_compactions() -> None:
    """``claude_code.api_request`` sums the input figures; ``claude_code.compaction`` maps sizes."""
    usage = {"input_tokens": "100", "cache_read_tokens": "9000", "cache_creation_tokens": "900"}
    api = _log(sc.CLAUDE_CODE_EVENT_API_REQUEST, {sc.SESSION_ID: "s", "model": "m", **usage}, 1)
    comp = _log(sc.CLAUDE_CODE_EVENT_COMPACTION, {sc.SESSION_ID: "s", "pre_tokens": "160000",
                "post_tokens": "40000", "success": "false", "trigger": "auto"}, 2)  # fmt: skip
    (turn,) = logs_to_items(api)
    (compaction,) = logs_to_items(comp)
    assert turn.conversation_id == "s"
    assert turn.turn is not None
    assert turn.turn.context_tokens == 10_000
    assert compaction.compaction is not None
    assert compaction.compaction.failed is True
    assert compaction.compaction.tokens_before == 160_000
    again = next(iter(logs_to_items(comp)))
    assert again.compaction is not None
    assert again.compaction.compaction_id == compaction.compaction.compaction_id


def test_other_log_records_are_ignored() -> None:
    """Log records that are not Claude Code's turn or compaction events are skipped."""
    assert list(logs_to_items(_log("claude_code.tool_result", {sc.SESSION_ID: "s"}, 1))) == []
    assert list(logs_to_items(_log("", {}, 1))) == []


def test_an_uncounted_call_of_our_conversation_is_not_a_turn() -> None:
    """A chat span with our conversation id but no turn index (a summarizer call) is skipped."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from otel_compaction import semconv as sc
    from otel_compaction.otlp.extract import spans_to_items

    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for index in (None, 7):
        span = spans.add(name="chat m", trace_id=b"t" * 16, span_id=bytes([index or 1]) * 8)
        for key, value in ((sc.CONVERSATION_ID, "c"), (sc.GEN_AI_OPERATION_NAME, "chat")):
            span.attributes.add(key=key).value.string_value = value
        span.attributes.add(key=sc.GEN_AI_USAGE_INPUT_TOKENS).value.int_value = 1000
        if index is not None:
            span.attributes.add(key=sc.TURN_INDEX).value.int_value = index
    items = list(spans_to_items(request))
    assert [i.turn_index for i in items] == [7]


def test_every_key_and_name_that_routes_a_span_holds_a_marker() -> None:
    """The request-level byte test cannot skip a span the span loop would read or count."""
    from otel_compaction.otlp import extract

    routed = (
        *extract.ENGINE_INPUT_KEYS,
        sc.GEN_AI_USAGE_PROMPT_TOKENS,
        sc.OPENINFERENCE_PROMPT_TOKENS,
        sc.GEN_AI_OPERATION_NAME,
        sc.OPENINFERENCE_SPAN_KIND,
        sc.SPAN_COMPACTION,
        sc.LITELLM_RAW_REQUEST_SPAN,
    )
    for text in routed:
        assert any(marker in text.encode() for marker in extract.MARKERS), text


def test_a_request_without_genai_spans_is_not_parsed_further(monkeypatch: Any) -> None:
    """HTTP and database spans only: no items, and the attribute view is never built."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_compaction.otlp import extract

    def fail(_data: bytes) -> None:
        raise AssertionError("the view was parsed")

    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for n in range(3):
        span = spans.add(name="GET", trace_id=b"t" * 16, span_id=bytes([n + 1]) * 8)
        span.attributes.extend(key_values({"http.request.method": "GET", "server.port": 443}))
    monkeypatch.setattr(extract, "parse_trace_view", fail)
    assert extract.span_items(request) == []
    spans[1].attributes.extend(key_values({sc.GEN_AI_USAGE_INPUT_TOKENS: 5}))
    with pytest.raises(AssertionError, match="the view was parsed"):
        extract.span_items(request)  # a GenAI key: the view is parsed
