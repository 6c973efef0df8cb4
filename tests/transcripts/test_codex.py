"""The Codex rollout reader: token_count turns, tool calls, compactions counted once."""

from __future__ import annotations

import json

from otel_compaction.semconv import CompactionMode
from otel_compaction.transcripts import (
    CompactionEvent,
    ConversationInfo,
    Diagnostics,
    Event,
    TurnEvent,
)
from otel_compaction.transcripts.codex import read_codex
from tests.transcripts import TESTDATA

SESSION = "0199c0de-aaaa-7bbb-8ccc-000000000001"


def _read() -> tuple[list[Event], Diagnostics]:
    diagnostics = Diagnostics()
    return list(read_codex(TESTDATA / "codex_rollout.jsonl", diagnostics)), diagnostics


def test_conversation_is_the_session_id() -> None:
    """session_meta's id names the conversation and is the agent's own id."""
    events, _ = _read()
    infos = [e for e in events if isinstance(e, ConversationInfo)]
    assert [(i.conversation_id, i.agent, i.session_id) for i in infos] == [
        (SESSION, "codex", SESSION)
    ]


def test_one_turn_per_token_count_with_usage() -> None:
    """token_count events are turns; info null and repeated running totals are not."""
    events, _ = _read()
    turns = [e for e in events if isinstance(e, TurnEvent)]
    assert [t.observation.context_tokens for t in turns] == [12_000, 12_500, 13_100, 4_000, 3_000]


def test_context_includes_cached_input_and_window_comes_from_the_event() -> None:
    """input_tokens already counts the cached part; the window is model_context_window."""
    events, _ = _read()
    second = [e for e in events if isinstance(e, TurnEvent)][1]
    assert second.observation.context_tokens == 12_500
    assert second.call.cache_read_tokens == 11_000
    assert second.observation.window == 272_000
    assert second.observation.model == "gpt-5-codex"
    assert second.call.provider == "openai"


def test_tool_calls_with_arguments_and_outputs_as_new_content() -> None:
    """function, custom and local shell calls belong to the call whose token_count follows."""
    events, _ = _read()
    turns = [e for e in events if isinstance(e, TurnEvent)]
    assert [t.observation.tool_calls for t in turns] == [
        ("shell",), ("shell",), ("apply_patch",), ("local_shell",), (),
    ]  # fmt: skip
    arguments = turns[1].observation.tool_arguments[0]
    assert arguments is not None
    command = json.loads(arguments)["command"]
    assert command[-1].startswith("pytest")
    assert turns[0].observation.tool_output_tokens == ()
    assert len(turns[1].observation.tool_output_tokens) == 1
    assert turns[0].observation.new_content_tokens > 0  # the user message


def test_compacted_and_context_compacted_count_once() -> None:
    """Both records of one compaction make one event; a server compaction has no text."""
    events, _ = _read()
    compactions = [e.observation for e in events if isinstance(e, CompactionEvent)]
    assert [c.mode for c in compactions] == [
        CompactionMode.LOSSY, CompactionMode.SERVER, CompactionMode.LOSSY,
    ]  # fmt: skip
    assert compactions[0].summary_text is not None
    assert compactions[0].summary_text.startswith("## Goal")
    assert compactions[0].tokens_before == 13_100  # the last call's context
    assert compactions[1].summary_text is None
    assert len({c.compaction_id for c in compactions}) == 3


def test_compaction_is_observed_before_the_next_turn() -> None:
    """Each compaction event precedes the first token_count after it."""
    events, _ = _read()
    kinds = [type(e).__name__[0] for e in events if not isinstance(e, ConversationInfo)]
    assert "".join(kinds) == "TTTCTCTC"


def test_broken_line_is_reported_with_its_number() -> None:
    """The truncated function_call_output line is skipped and named."""
    _, diagnostics = _read()
    assert [s.line for s in diagnostics.skipped] == [22]
