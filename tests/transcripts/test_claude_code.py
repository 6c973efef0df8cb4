"""The Claude Code reader: calls, content, compactions, sub-agents and broken lines."""

from __future__ import annotations

import json
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.semconv import CompactionMode, CompactionSource
from otel_compaction.transcripts import (
    CompactionEvent,
    ConversationInfo,
    Diagnostics,
    Event,
    Replayer,
    TurnEvent,
)
from otel_compaction.transcripts.claude_code import read_claude_code
from tests.transcripts import TESTDATA

MAIN = "5e551011-basic"
NESTED = "4e1f0c5a-livelock-0004"
FRESH = "7b2d9e31-reset-0004"


def _read(path: Path) -> tuple[list[Event], Diagnostics]:
    diagnostics = Diagnostics()
    return list(read_claude_code(path, diagnostics)), diagnostics


def _turns(events: list[Event], cid: str = MAIN) -> list[TurnEvent]:
    return [e for e in events if isinstance(e, TurnEvent) and e.conversation_id == cid]


def _compactions(events: list[Event], cid: str = MAIN) -> list[CompactionEvent]:
    return [e for e in events if isinstance(e, CompactionEvent) and e.conversation_id == cid]


def test_one_turn_per_api_call_with_split_records_merged() -> None:
    """Records sharing message.id are one call; a repeated record adds no tool call."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    turns = _turns(events)
    assert [t.call.response_id for t in turns] == ["msg_A", "msg_B", "msg_C", "msg_D"]
    first = turns[0]
    assert first.observation.tool_calls == ("Bash",)
    arguments = first.observation.tool_arguments[0]
    assert arguments is not None
    assert json.loads(arguments)["command"].startswith("pytest")
    assert first.call.output_tokens == 95  # the last record's usage
    assert turns[1].observation.tool_calls == ("Read", "Grep")


def test_context_is_the_sum_of_the_three_input_figures() -> None:
    """input + cache creation + cache read tokens is the context of a call."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    first = _turns(events)[0]
    assert first.observation.context_tokens == 10 + 15_000 + 5_000
    assert first.call.cache_write_tokens == 15_000
    assert first.call.cache_read_tokens == 5_000
    assert first.observation.model == "claude-sonnet-4-5-20250929"


def test_tool_results_are_the_next_calls_new_content() -> None:
    """Tool results after a call count as new content and tool outputs of the following call."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    turns = _turns(events)
    assert turns[0].observation.tool_output_tokens == ()
    assert turns[0].observation.new_content_tokens > 0  # the user's prompt
    assert len(turns[1].observation.tool_output_tokens) == 1
    assert len(turns[2].observation.tool_output_tokens) == 2
    assert turns[2].observation.new_content_tokens == sum(turns[2].observation.tool_output_tokens)


def test_compact_boundary_with_its_summary_is_one_lossy_compaction() -> None:
    """compact_boundary plus the isCompactSummary record give trigger, sizes and summary."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    lossy = _compactions(events)[0].observation
    assert lossy.source is CompactionSource.IMPORT
    assert lossy.mode is CompactionMode.LOSSY
    assert (lossy.trigger, lossy.tokens_before, lossy.tokens_after) == ("manual", 150_000, 42_000)
    assert lossy.summary_text is not None
    assert "## Next action" in lossy.summary_text
    assert lossy.compaction_id == "b0000000-0000-4000-8000-000000000010"


def test_compaction_comes_before_the_first_call_that_sees_it() -> None:
    """The engine must observe a compaction before the turn of the compacted context."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    mine = [e for e in events if getattr(e, "conversation_id", None) == MAIN]
    kinds = [type(e).__name__ for e in mine if not isinstance(e, ConversationInfo)]
    assert kinds == [
        "TurnEvent", "TurnEvent", "CompactionEvent", "TurnEvent", "CompactionEvent", "TurnEvent",
    ]  # fmt: skip


def test_microcompact_is_a_prune() -> None:
    """microcompact_boundary is a prune of tool outputs, with tokens after = before - saved."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    prune = _compactions(events)[1].observation
    assert prune.mode is CompactionMode.PRUNE
    assert (prune.tokens_before, prune.tokens_after) == (60_000, 40_000)
    assert prune.summary_text is None


def test_titles_synthetic_messages_and_other_records_are_not_events() -> None:
    """Summary titles, snapshots, synthetic API-error messages and hook notices add nothing."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    assert len(_compactions(events)) == 2
    assert all(t.call.response_id != "msg_synthetic" for t in _turns(events))


def test_sidechain_is_its_own_conversation() -> None:
    """Sub-agent records become <session>/agent-<agentId>, with no gen_ai conversation id."""
    events, _ = _read(TESTDATA / "claude_basic.jsonl")
    infos = {e.conversation_id: e for e in events if isinstance(e, ConversationInfo)}
    assert set(infos) == {MAIN, f"{MAIN}/agent-a1b2c3"}
    assert infos[MAIN].session_id == MAIN
    assert infos[f"{MAIN}/agent-a1b2c3"].session_id is None
    side = _turns(events, f"{MAIN}/agent-a1b2c3")
    assert [t.observation.context_tokens for t in side] == [9_004]


def test_broken_lines_are_reported_and_skipped() -> None:
    """A truncated record, a non-JSON line and a JSON array are listed with their lines."""
    _, diagnostics = _read(TESTDATA / "claude_basic.jsonl")
    assert [s.line for s in diagnostics.skipped] == [11, 14, 19]
    assert all(s.file.endswith("claude_basic.jsonl") for s in diagnostics.skipped)


def test_no_compaction_file_gives_turns_only() -> None:
    """A session that never compacted yields its turns and no compaction."""
    events, diagnostics = _read(TESTDATA / "claude_no_compaction.jsonl")
    assert len(_turns(events, "5e551012-plain")) == 2
    assert not [e for e in events if isinstance(e, CompactionEvent)]
    assert diagnostics.skipped_count == 0


def test_summary_containing_the_previous_one_continues_the_lineage() -> None:
    """Nested summaries continue the lineage; summaries rebuilt from raw turns do not."""
    nested = _generations(TESTDATA / "claude_livelock.jsonl", NESTED)
    fresh = _generations(TESTDATA / "claude_reset.jsonl", FRESH)
    assert nested == list(range(11))
    assert fresh == [0] * 5


def _generations(path: Path, conversation_id: str) -> list[int]:
    """The lineage generation the engine gives each compaction of the transcript."""
    events, _ = _read(path)
    replayer = Replayer(ConversationRegistry(Settings()))
    steps = [replayer.feed(e) for e in events]
    return [
        s.compaction.record.generation
        for s in steps
        if s.compaction is not None and s.compaction.record.conversation_id == conversation_id
    ]


def test_summary_record_without_a_boundary_is_still_a_compaction(tmp_path: Path) -> None:
    """Builds older than compact_boundary wrote only the isCompactSummary record."""
    lines = (TESTDATA / "claude_no_compaction.jsonl").read_text(encoding="utf-8").splitlines()
    summary = {
        "type": "user",
        "sessionId": "5e551012-plain",
        "uuid": "legacy-summary",
        "isCompactSummary": True,
        "message": {"role": "user", "content": "## Goal\nexplain cache.py"},
    }
    path = tmp_path / "legacy.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(summary), *lines[2:]]) + "\n", "utf-8")
    events, _ = _read(path)
    compactions = _compactions(events, "5e551012-plain")
    assert len(compactions) == 1
    assert compactions[0].observation.summary_text == "## Goal\nexplain cache.py"
    assert compactions[0].observation.trigger is None


def test_fields_of_unexpected_types_do_not_stop_the_reading(tmp_path: Path) -> None:
    """Odd field types (int content, list usage, string metadata) are tolerated, not fatal."""
    lines = (TESTDATA / "claude_no_compaction.jsonl").read_text(encoding="utf-8").splitlines()
    session = {"sessionId": "5e551012-plain"}
    odd = [
        {**session, "type": "user", "uuid": "u1", "message": {"content": 7}},
        {**session, "type": "assistant", "uuid": "u2", "message": {"id": "m", "usage": [1]}},
        {**session, "type": "system", "subtype": "compact_boundary", "compactMetadata": "x"},
        {**session, "type": "assistant", "uuid": "u3", "message": "not an object"},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join([lines[0], *map(json.dumps, odd), *lines[1:]]) + "\n", "utf-8")
    events, diagnostics = _read(path)
    assert len(_turns(events, "5e551012-plain")) == 2
    compaction = _compactions(events, "5e551012-plain")[0].observation
    assert (compaction.trigger, compaction.tokens_before) == (None, None)
    assert diagnostics.skipped_count == 0
