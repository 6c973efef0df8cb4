"""Other instrumentations' inference spans read into ``CallFacts``: tokens, keys, content."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction.otlp import content, dialects
from otel_compaction.otlp.attributes import key_values
from otel_compaction.otlp.extract import Item, span_items

TRACE = bytes(range(16))
PARENT = b"\x07" * 8


def _items(
    attrs: dict[str, Any], *, name: str = "chat m", parent: bytes = PARENT, service: str = "svc"
) -> list[Item]:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(key_values({sc.SERVICE_NAME: service}))
    span = rs.scope_spans.add().spans.add(
        trace_id=TRACE, span_id=b"\x01" * 8, parent_span_id=parent, name=name
    )
    span.start_time_unix_nano = 5
    span.attributes.extend(key_values(attrs))
    return span_items(request, targets=False)


def _call(attrs: dict[str, Any], **kwargs: Any) -> Item:
    items = _items(attrs, **kwargs)
    assert len(items) == 1
    assert items[0].call is not None
    return items[0]


def _messages(*pairs: tuple[str, str]) -> str:
    return json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in pairs])


def test_each_dialect_is_told_by_its_names() -> None:
    """Span names and marker attributes name the instrumentation that wrote a span."""
    cases = {
        ("ChatCompletion", sc.OPENINFERENCE_SPAN_KIND): "openinference",
        ("anthropic.messages.create", "x"): "anthropic_sdk",
        ("litellm_request", "x"): "litellm",
        ("openai.chat", "x"): "openllmetry",
        ("chat m", sc.GEN_AI_USAGE_TOTAL_TOKENS): "openllmetry",
        ("chat m", "x"): "genai",
    }
    for (name, key), dialect in cases.items():
        assert dialects.dialect_of(name, {key: b""}) == dialect


def test_input_tokens_in_every_dialect_and_cache_reported_apart() -> None:
    """input_tokens, prompt_tokens or llm.token_count.prompt; a larger cache read is added."""
    assert _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 900}).turn.context_tokens == 900  # type: ignore[union-attr]
    assert _call({sc.GEN_AI_USAGE_PROMPT_TOKENS: 800}).turn.context_tokens == 800  # type: ignore[union-attr]
    item = _call({sc.OPENINFERENCE_PROMPT_TOKENS: 700, sc.OPENINFERENCE_SPAN_KIND: "LLM"})
    assert item.turn is not None
    assert item.turn.context_tokens == 700
    apart = {sc.GEN_AI_USAGE_INPUT_TOKENS: 100, sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 5000,
             sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: 50}  # fmt: skip
    assert dialects.input_tokens(_encoded(apart)) == 5150
    included = {sc.GEN_AI_USAGE_INPUT_TOKENS: 6000, sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 5000}
    assert dialects.input_tokens(_encoded(included)) == 6000
    assert dialects.input_tokens(_encoded({sc.GEN_AI_OPERATION_NAME: "chat"})) is None


def _encoded(attrs: dict[str, Any]) -> dict[str, bytes]:
    return {kv.key: kv.value.SerializeToString() for kv in key_values(attrs)}


def test_conversation_keys_in_order_then_trace_and_parent() -> None:
    """gen_ai.conversation.id, session.id, association properties, then trace and parent span."""
    base = {sc.GEN_AI_USAGE_INPUT_TOKENS: 10}
    association = sc.TRACELOOP_ASSOCIATION_PREFIX + "session_id"
    both = _call({**base, sc.GEN_AI_CONVERSATION_ID: "g", sc.SESSION_ID: "s"})
    assert (both.conversation_id, both.call.key_source) == ("g", "gen_ai.conversation.id")  # type: ignore[union-attr]
    session = _call({**base, sc.SESSION_ID: "s", association: "a"})
    assert (session.conversation_id, session.call.key_source) == ("s", "session.id")  # type: ignore[union-attr]
    assoc = _call({**base, association: "a"})
    assert assoc.conversation_id == "a"
    traced = _call(base)
    assert traced.conversation_id == f"{TRACE.hex()}/{PARENT.hex()}"
    assert traced.call is not None
    assert traced.call.service == "svc"
    loose = _call(base, parent=b"")
    assert loose.call is not None
    assert loose.call.loose


def test_content_gives_system_task_last_user_tools_and_reply() -> None:
    """gen_ai.input.messages and friends: prompt, task, last user text, tools, the reply."""
    attrs = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
        sc.GEN_AI_INPUT_MESSAGES: _messages(("system", "S"), ("user", "task"), ("user", "more")),
        sc.GEN_AI_OUTPUT_MESSAGES: _messages(("assistant", "the reply")),
        sc.GEN_AI_TOOL_DEFINITIONS: json.dumps([{"name": "read"}]),
        sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
    }
    call = _call(attrs).call
    assert call is not None
    assert (call.last_user, call.message_count, call.output_text) == ("more", 2, "the reply")
    assert call.tools_offered is True
    assert call.finish == "stop"
    assert call.system_key is not None
    assert call.task_key is not None
    other = _call({**attrs, sc.GEN_AI_SYSTEM_INSTRUCTIONS: "I"}).call
    assert other is not None
    assert other.system_key != call.system_key


def test_openinference_and_older_openllmetry_content() -> None:
    """llm.input_messages.N.message.* and gen_ai.prompt.N.*: the same facts."""
    oi = {
        sc.OPENINFERENCE_SPAN_KIND: "LLM",
        sc.OPENINFERENCE_PROMPT_TOKENS: 10,
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "S",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "task",
        sc.OPENINFERENCE_OUTPUT_CONTENT: "reply",
        "llm.tools.0.tool.json_schema": "{}",
        sc.OPENINFERENCE_FINISH_REASON: "tool_calls",
    }
    call = _call(oi).call
    assert call is not None
    assert (call.last_user, call.output_text, call.tools_offered) == ("task", "reply", True)
    assert call.finish == "tool_calls"
    old = {
        sc.GEN_AI_USAGE_PROMPT_TOKENS: 10,
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "task",
        sc.GEN_AI_COMPLETION_CONTENT: "reply",
        sc.LLM_FUNCTIONS_PREFIX: "read",
    }
    call = _call(old, name="openai.chat").call
    assert call is not None
    assert (call.dialect, call.last_user, call.output_text) == ("openllmetry", "task", "reply")
    assert call.tools_offered is True


def test_compaction_parts_and_the_compacted_flag() -> None:
    """A compaction message part or gen_ai.conversation.compacted marks the call compacted."""
    part = json.dumps([{"role": "user", "parts": [{"type": "compaction", "content": "sum"}]}])
    call = _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_INPUT_MESSAGES: part}).call
    assert call is not None
    assert call.compacted
    flagged = _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_CONVERSATION_COMPACTED: True})
    assert flagged.call is not None
    assert flagged.call.compacted
    plain = _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_CONVERSATION_COMPACTED: False})
    assert plain.call is not None
    assert not plain.call.compacted


def test_unparsable_or_huge_content_is_ignored() -> None:
    """Content that is not JSON, or past the size bound, gives no content facts."""
    for text in ("not json", "[" + " " * content.MAX_CONTENT_CHARS + "]", json.dumps({"a": 1})):
        call = _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_INPUT_MESSAGES: text}).call
        assert call is not None
        assert call.message_count is None
    odd = json.dumps([{"role": "user", "content": [1, 2]}, {"role": "user", "parts": [{}]}, 3])
    call = _call({sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_INPUT_MESSAGES: odd}).call
    assert call is not None
    assert call.message_count == 2


def test_inference_spans_without_tokens_are_counted_by_dialect() -> None:
    """A chat span with no input token count is no item, and is counted; tool spans are not."""
    before = dialects.unread_spans()
    assert _items({sc.GEN_AI_OPERATION_NAME: "chat"}) == []
    assert _items({sc.GEN_AI_OPERATION_NAME: "execute_tool"}) == []
    assert _items({sc.OPENINFERENCE_SPAN_KIND: "CHAIN", sc.OPENINFERENCE_PROMPT_TOKENS: 5}) == []
    assert _items({sc.OPENINFERENCE_SPAN_KIND: "LLM"}) == []
    after = dialects.unread_spans()
    assert after.get("genai", 0) - before.get("genai", 0) == 1
    assert after.get("openinference", 0) - before.get("openinference", 0) == 1


def test_a_non_inference_operation_with_tokens_is_no_call() -> None:
    """An embeddings span reports input tokens but is no turn."""
    assert _items({sc.GEN_AI_OPERATION_NAME: "embeddings", sc.GEN_AI_USAGE_INPUT_TOKENS: 5}) == []


def test_the_processor_metrics_report_unread_spans() -> None:
    """``/metrics`` carries the unread-span counter for every dialect."""
    from otel_compaction.processor.telemetry import ProcessorMetrics

    metrics = ProcessorMetrics("p", livelocked=lambda: 0, active=lambda: 0, queue_size=lambda: 0)
    try:
        text = metrics.exposition().decode()
    finally:
        metrics.shutdown()
    for dialect in sc.Dialect:
        assert f'compaction_processor_dialect="{dialect.value}"' in text
    assert "compaction_processor_unread_spans_total" in text


def test_a_kvlist_value_is_read_as_nothing() -> None:
    """A finish reason of an unexpected type gives no finish reason."""
    kv = KeyValue(key=sc.GEN_AI_RESPONSE_FINISH_REASONS, value=AnyValue(int_value=3))
    attrs = {kv.key: kv.value.SerializeToString(), sc.GEN_AI_USAGE_INPUT_TOKENS: b""}
    _, facts = dialects.read_call("chat m", attrs, 5, TRACE, PARENT)
    assert facts.finish is None


def test_litellm_raw_request_spans_are_read_from_their_repr_text() -> None:
    """``raw_gen_ai_request``: usage (OpenAI's or Anthropic's), id, finish, tools, messages."""
    raw = {
        "llm.openai.usage": "{'prompt_tokens': 900, 'completion_tokens': 5}",
        "llm.openai.id": "chatcmpl-1",
        "llm.openai.choices": "[{'finish_reason': 'stop', 'message': {'content': 'sum'}}]",
        "llm.openai.tools": "[{'type': 'function'}]",
        "llm.openai.messages": "[{'role': 'system', 'content': 'S'}, {'role': 'user', "
        "'content': 'task'}]",
    }
    item = _call(raw, name=sc.LITELLM_RAW_REQUEST_SPAN)
    assert item.turn is not None
    assert item.turn.context_tokens == 900
    call = item.call
    assert call is not None
    assert (call.dialect, call.response_id, call.finish) == ("litellm", "chatcmpl-1", "stop")
    assert (call.tools_offered, call.last_user, call.output_text) == (True, "task", "sum")
    anthropic = {"llm.anthropic.usage": "{'input_tokens': 10, 'cache_read_input_tokens': 90}"}
    assert content.raw_request_tokens(_encoded(anthropic)) == 100
    assert content.raw_request_tokens(_encoded({"llm.x.usage": "{'total_tokens': 3}"})) is None
    assert content.raw_request_tokens(_encoded({"other": 1})) is None
    odd = {**raw, "llm.openai.messages": "[Message(role='user')]", "llm.openai.choices": "?"}
    call = _call(odd, name=sc.LITELLM_RAW_REQUEST_SPAN).call
    assert call is not None
    assert (call.message_count, call.output_text, call.finish) == (None, None, None)


def test_a_raw_request_under_litellms_own_span_is_left_to_that_span() -> None:
    """In one request, the ``litellm_request`` span is the call; its raw child is skipped."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    own = spans.add(trace_id=TRACE, span_id=b"\x02" * 8, name=sc.LITELLM_REQUEST_SPAN)
    own.attributes.extend(key_values({sc.GEN_AI_USAGE_INPUT_TOKENS: 5, sc.LITELLM_CALL_ID: "x"}))
    raw = spans.add(
        trace_id=TRACE, span_id=b"\x03" * 8, parent_span_id=b"\x02" * 8, name="raw_gen_ai_request"
    )
    raw.attributes.extend(key_values({"llm.openai.usage": "{'prompt_tokens': 5}"}))
    app = spans.add(trace_id=TRACE, span_id=b"\x04" * 8, name="agent run")
    app.attributes.extend(key_values({sc.GEN_AI_USAGE_INPUT_TOKENS: 5, sc.LITELLM_CALL_ID: "y"}))
    items = span_items(request, targets=False)
    assert [i.span_id for i in items] == [b"\x02" * 8]


def test_each_message_attribute_is_parsed_once_for_all_its_readers(monkeypatch: Any) -> None:
    """A content-captured span's input and output messages are parsed once each, and every
    reader (facts, tool calls, tool results, compaction parts) still gets what it read."""
    request = [
        {"role": "user", "parts": [{"type": "text", "content": "task"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "read", "arguments": {}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "response": "x" * 40}]},
    ]
    reply = [
        {"role": "assistant", "parts": [
            {"type": "compaction", "content": "sum"},
            {"type": "tool_call", "name": "grep", "arguments": {"q": "a"}},
        ]},
    ]  # fmt: skip
    attrs = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
        sc.GEN_AI_INPUT_MESSAGES: json.dumps(request),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(reply),
    }
    parsed: list[str] = []
    loads = json.loads

    def counted(text: str, **kwargs: Any) -> Any:
        parsed.append(text)
        return loads(text, **kwargs)

    monkeypatch.setattr(json, "loads", counted)  # the module content.py parses with
    item = _call(attrs)
    assert sorted(parsed) == sorted([json.dumps(request), json.dumps(reply)])
    assert item.call is not None
    assert item.turn is not None
    assert (item.call.last_user, item.call.message_count, item.call.compacted) == (
        "x" * 40,
        3,
        True,
    )
    assert item.call.output_text == "sum\n" + json.dumps({"q": "a"})
    assert (item.turn.tool_calls, item.turn.tool_arguments) == (("grep",), ('{"q": "a"}',))
    assert len(item.turn.tool_output_tokens) == 1
    assert item.turn.tool_output_tokens[0] > 0


def test_malformed_content_is_still_a_turn_with_no_content_facts() -> None:
    """A span whose message attributes are not JSON is still read as a turn, with its token
    count, and gives no content facts, tool calls or tool results."""
    attrs = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
        sc.GEN_AI_INPUT_MESSAGES: "[not json",
        sc.GEN_AI_OUTPUT_MESSAGES: "{also not",
    }
    item = _call(attrs)
    assert item.call is not None
    assert item.turn is not None
    assert item.turn.context_tokens == 10
    assert (item.call.message_count, item.call.output_text, item.call.compacted) == (
        None,
        None,
        False,
    )
    assert (item.turn.tool_calls, item.turn.tool_output_tokens) == ((), ())
