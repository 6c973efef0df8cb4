"""Provider-side compaction: Anthropic compaction blocks and context edits, OpenAI items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import (
    COMPACT,
    CONTEXT_MANAGEMENT,
    MODEL,
    OPENAI_MODEL,
    RESPONSES,
    anthropic_client,
    attrs,
    chat_spans,
    compaction_attrs,
    openai_client,
)

if TYPE_CHECKING:
    from anthropic.types.beta import BetaMessageParam
    from openai.types.responses.response_create_params import ContextManagement

TASK: BetaMessageParam = {"role": "user", "content": "Refactor the cache layer."}
COMPACT_EDIT = {
    "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 600}}]
}
CLEAR = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 400},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
}
READ = Reply("", tool_calls=(ToolCall("read_file", {"path": "cache.py"}),))


def _beta_agent(api: FakeLLMAPI, turns: int, stream: bool = False, **kwargs: Any) -> list[Any]:
    client = anthropic_client(api)
    messages: list[Any] = [TASK]
    for _ in range(turns):
        if stream:
            with client.beta.messages.stream(
                model=MODEL, max_tokens=256, messages=messages, **kwargs
            ) as s:
                message: Any = s.get_final_message()
        else:
            message = client.beta.messages.create(
                model=MODEL, max_tokens=256, messages=messages, **kwargs
            )
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": "x" * 600} for u in uses]
        messages.append({"role": "user", "content": results or "go on"})
    return messages


@CONTEXT_MANAGEMENT
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_compaction_block_is_a_server_compaction_once(
    cap: Capture, instrumented: CompactionInstrumentor, stream: bool
) -> None:
    """A compaction block (or compaction_delta) is one server compaction at the current turn."""
    _beta_agent(FakeLLMAPI(default=READ), 6, stream=stream, context_management=COMPACT_EDIT)
    compactions = compaction_attrs(cap)
    assert compactions
    first = compactions[0]
    assert first[sc.COMPACTION_SOURCE] == "anthropic"
    assert first[sc.COMPACTION_MODE] == "server"
    assert first[sc.COMPACTION_TRIGGER] == "auto"
    assert first[sc.TOKENS_SUMMARY] > 0
    assert sc.SUMMARY_TEXT not in first  # content capture is off
    spans = [attrs(s) for s in chat_spans(cap)]
    turn = first[sc.TURN_INDEX]
    assert spans[turn - 1][sc.GEN_AI_CONVERSATION_COMPACTED] is True
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert all(c[sc.COMPACTION_SOURCE] == "anthropic" for c in compactions)


@CONTEXT_MANAGEMENT
def test_failed_compaction_block_is_marked_failed(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A compaction block with content null is recorded as a failed summary."""
    api = FakeLLMAPI([Reply("ok", compaction="-", compaction_failed=True)])
    client = anthropic_client(api)
    client.beta.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.SUMMARY_FAILED] is True


@CONTEXT_MANAGEMENT
def test_context_edits_are_one_prune_until_more_is_cleared(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """applied_edits become a prune compaction; the same clearing re-reported is not a new one."""
    _beta_agent(FakeLLMAPI(default=READ), 6, context_management=CLEAR)
    compactions = compaction_attrs(cap)
    assert compactions
    assert {c[sc.COMPACTION_MODE] for c in compactions} == {"prune"}
    assert {c[sc.COMPACTION_TRIGGER] for c in compactions} == {"clear_tool_uses_20250919"}
    assert all(c[sc.TOKENS_BEFORE] > c[sc.TOKENS_AFTER] for c in compactions)
    turns = [c[sc.TURN_INDEX] for c in compactions]
    assert len(turns) == len(set(turns))


@CONTEXT_MANAGEMENT
def test_pure_compaction_request_is_no_turn_and_the_conversation_goes_on(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """compaction={"type": "summarize"}: a compaction span, no turn; the block sent back goes on."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    messages = _beta_agent(FakeLLMAPI(default=READ), 0)
    for _ in range(3):
        message = client.beta.messages.create(model=MODEL, max_tokens=64, messages=messages)
        messages += [
            {"role": "assistant", "content": message.content},
            {"role": "user", "content": "more"},
        ]
    compacted = client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=messages, compaction={"type": "summarize"}
    )
    assert compacted.stop_reason == "compaction"
    after: list[BetaMessageParam] = [
        {"role": "assistant", "content": compacted.content},
        {"role": "user", "content": "go"},
    ]
    client.beta.messages.create(model=MODEL, max_tokens=64, messages=after)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, None, 4]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_TRIGGER] == "summarize"
    assert compaction[sc.TURN_INDEX] == 4


def _responses_agent(client: Any, turns: int, **kwargs: Any) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": "Refactor the cache layer."}]
    for _ in range(turns):
        response = client.responses.create(model=OPENAI_MODEL, input=items, **kwargs)
        items += list(response.output)
        items.append({"type": "function_call_output", "call_id": "c", "output": "y" * 600})
    return items


@RESPONSES
@pytest.mark.parametrize("stream", [False, True])
def test_openai_compaction_item_is_a_server_compaction(
    cap: Capture, instrumented: CompactionInstrumentor, stream: bool
) -> None:
    """context_management compaction: the compaction item becomes one openai server compaction,
    sized by the next call (the compacting call's usage may count either side of it)."""
    client = openai_client(FakeLLMAPI(default=READ))
    items = _responses_agent(client, 3)
    management: list[ContextManagement] = [{"type": "compaction", "compact_threshold": 300}]
    response: Any
    if stream:
        with client.responses.stream(
            model=OPENAI_MODEL, input=items, context_management=management
        ) as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(
            model=OPENAI_MODEL, input=items, context_management=management
        )
    assert compaction_attrs(cap) == []  # open until the next call gives its size after
    kept: list[Any] = [
        item.model_dump(exclude_none=True, warnings=False) for item in response.output
    ]
    client.responses.create(model=OPENAI_MODEL, input=[*kept, {"role": "user", "content": "go"}])
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_SOURCE] == "openai"
    assert compaction[sc.COMPACTION_MODE] == "server"
    assert compaction[sc.COMPACTION_TRIGGER] == "compact_threshold"
    assert compaction[sc.COMPACTION_CALL_USAGE] == "unknown"
    assert compaction[sc.TURN_INDEX] == 5
    spans = [attrs(s) for s in chat_spans(cap)]
    assert compaction[sc.TOKENS_AFTER] == spans[4][sc.GEN_AI_USAGE_INPUT_TOKENS]


@COMPACT
def test_responses_compact_is_a_compaction_not_a_turn(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """responses.compact: a compaction span; its output sent back continues the conversation."""
    client = openai_client(FakeLLMAPI(default=READ))
    items = _responses_agent(client, 3)
    compacted = client.responses.compact(model=OPENAI_MODEL, input=items)
    # The compacted user messages are typed as output messages; dump them as sent back.
    kept: list[Any] = [
        item.model_dump(exclude_none=True, warnings=False) for item in compacted.output
    ]
    client.responses.create(model=OPENAI_MODEL, input=[*kept, {"role": "user", "content": "go"}])
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, None, 4]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_TRIGGER] == "responses.compact"
    assert compaction[sc.COMPACTION_CALL_USAGE] == "before"
    assert compaction[sc.TOKENS_BEFORE] == attrs(chat_spans(cap)[3])[sc.GEN_AI_USAGE_INPUT_TOKENS]
    assert spans[4][sc.GEN_AI_CONVERSATION_COMPACTED] is True


@RESPONSES
def test_cache_diagnostics_context_compacted_counts_once(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A cache miss reason context_compacted is a compaction when no other report saw it."""
    replies = [Reply("a"), Reply("b", cache_miss_reason="context_compacted"), Reply("c")]
    client = openai_client(FakeLLMAPI(replies))
    first = client.responses.create(model=OPENAI_MODEL, input="start")
    second = client.responses.create(model=OPENAI_MODEL, input="x", previous_response_id=first.id)
    client.responses.create(model=OPENAI_MODEL, input="y", previous_response_id=second.id)
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_TRIGGER] == "context_compacted"
    assert compaction[sc.TURN_INDEX] == 2


@CONTEXT_MANAGEMENT
@pytest.mark.parametrize("settings", [Settings(capture_content=True, content_max_chars=40)])
def test_summary_text_is_captured_only_when_allowed_and_capped(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """With capture on, the compaction span carries the summary, cut at the cap and marked."""
    summary = "The fixture in conftest.py is stale; the parser is fine. " * 3
    client = anthropic_client(FakeLLMAPI([Reply("ok", compaction=summary)]))
    client.beta.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.SUMMARY_TEXT].startswith(summary[:40])
    assert "truncated" in compaction[sc.SUMMARY_TEXT]
    assert compaction[sc.CONTENT_TRUNCATED] is True
