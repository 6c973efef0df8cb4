"""Compactions inferred from other instrumentations' calls: the rules one by one."""

from __future__ import annotations

import itertools
from typing import Any

from otel_compaction.config import Settings
from otel_compaction.model import Finding, TurnObservation
from otel_compaction.otlp.dialects import CallFacts
from otel_compaction.otlp.extract import Item, ItemKind
from otel_compaction.otlp.inferred import CallInference, LooseGrouper
from otel_compaction.otlp.state import ConversationState
from otel_compaction.semconv import FindingKind, ProcessorReason

SETTINGS = Settings(model_windows={"m": 10_000})  # pressure at 6,500 tokens
TRACE = bytes(range(16))
_spans = itertools.count(1)


def _call(context: int, finish: str | None = "tool_calls", **facts: Any) -> Item:
    span = next(_spans)
    return Item(
        conversation_id="c",
        kind=ItemKind.TURN,
        turn_index=None,
        time_ns=span * 10**9,
        trace_id=TRACE,
        span_id=span.to_bytes(8, "big"),
        dedupe_key=span,
        turn=TurnObservation(context_tokens=context, model="m"),
        call=CallFacts(
            dialect="genai",
            key_source="trace",
            context_tokens=context,
            finish=finish,
            model="m",
            **facts,
        ),
    )


def _kinds(items: list[Item]) -> list[str]:
    out = []
    for item in items:
        if item.kind is ItemKind.COMPACTION:
            assert item.compaction is not None
            out.append(f"compaction:{item.compaction.trigger}")
        else:
            out.append(item.kind.name.lower())
    return out


def _feed(inference: CallInference, *items: Item) -> list[str]:
    out: list[str] = []
    for item in items:
        out += _kinds(inference.expand("c", item))
    return out


def test_a_fall_after_a_call_at_pressure_is_a_compaction() -> None:
    """Half the context gone after a call at pressure: a compaction (token_fall)."""
    got = _feed(CallInference(SETTINGS), _call(5000), _call(7000), _call(3000))
    assert got == ["turn", "turn", "compaction:token_fall", "turn"]


def test_a_fall_below_pressure_is_no_compaction() -> None:
    """The same fall from below pressure: no compaction."""
    got = _feed(CallInference(SETTINGS), _call(6000), _call(2000))
    assert got == ["turn", "turn"]


def test_a_call_without_tools_where_tools_were_offered_is_the_summarizer() -> None:
    """No tools offered, after calls that offered some: the next compaction's cost."""
    inference = CallInference(SETTINGS)
    got = _feed(
        inference,
        _call(5000, tools_offered=True),
        _call(5200, finish="stop", tools_offered=False, output_text="the summary"),
        _call(5100, tools_offered=True),
    )
    assert got == ["turn", "summarizer", "compaction:summarizer_call", "turn"]


def test_summarizer_shapes_by_operation_system_prompt_and_instruction() -> None:
    """An operation that says so, another system prompt, or a summarize instruction."""
    for shape in (
        {"operation": "summarize"},
        {"system_key": 2},
        {"last_user": "Please summarize the conversation so far"},
    ):
        inference = CallInference(SETTINGS)
        got = _feed(inference, _call(1000, system_key=1), _call(1100, finish="stop", **shape))
        assert got == ["turn", "summarizer"], shape


def test_a_call_asking_for_a_tool_is_never_a_summarizer() -> None:
    """Another system prompt, but the reply asks for a tool: an agent's step."""
    got = _feed(CallInference(SETTINGS), _call(1000, system_key=1), _call(1100, system_key=2))
    assert got == ["turn", "turn"]


def test_without_content_a_smaller_no_tool_call_at_pressure_is_a_side_call() -> None:
    """At pressure, a reply with no tool use and a smaller input: the summarizer's."""
    got = _feed(CallInference(SETTINGS), _call(7000), _call(2000, finish="stop"), _call(7100))
    assert got == ["turn", "summarizer", "compaction:uncarried_reply", "turn"]


def test_a_held_call_the_next_call_continues_is_a_turn() -> None:
    """A reply with no tool use at pressure is held; a next call carrying it makes it a turn."""
    inference = CallInference(SETTINGS)
    held = _call(7200, finish="end_turn", output_tokens=100)
    assert _feed(inference, _call(7000), held) == ["turn"]
    assert _feed(inference, _call(7400)) == ["turn", "turn"]


def test_a_held_call_the_next_call_does_not_continue_is_the_summarizer() -> None:
    """The next call's input is smaller than the held call's: the held call was a summary."""
    inference = CallInference(SETTINGS)
    assert _feed(inference, _call(7000), _call(7500, finish="stop", output_tokens=300)) == ["turn"]
    got = _feed(inference, _call(7100))
    assert got == ["summarizer", "compaction:uncarried_reply", "turn"]


def test_held_calls_are_flushed_as_turns_at_the_end() -> None:
    """No next call: a held call is a turn, handed back apart from its batch."""
    inference = CallInference(SETTINGS)
    _feed(inference, _call(7000), _call(7500, finish="stop"))
    (conversation, items), *rest = inference.flush()
    assert rest == []
    assert conversation == "c"
    assert _kinds(items) == ["turn"]
    assert items[0].expanded
    assert items[0].batch is None
    assert inference.flush() == []


def test_with_content_a_new_task_or_an_in_place_edit_is_no_compaction() -> None:
    """Another task message, or a message list that did not shrink: no compaction."""
    inference = CallInference(SETTINGS)
    first = _call(7000, task_key=1, message_count=9, system_key=5)
    assert _feed(inference, first, _call(1000, task_key=2, message_count=1, system_key=5)) == [
        "turn",
        "turn",
    ]
    inference = CallInference(SETTINGS)
    pruned = _call(3000, task_key=1, message_count=9, system_key=5)
    assert _feed(inference, first, pruned) == ["turn", "turn"]
    inference = CallInference(SETTINGS)
    dropped = _call(3000, task_key=1, message_count=3, system_key=5)
    assert _feed(inference, first, dropped) == ["turn", "compaction:token_fall", "turn"]


def test_the_compacted_flag_marks_one_compaction() -> None:
    """gen_ai.conversation.compacted on the first call after it; still set later: no new one."""
    got = _feed(
        CallInference(SETTINGS), _call(1000), _call(900, compacted=True), _call(950, compacted=True)
    )
    assert got == ["turn", "compaction:conversation_compacted", "turn", "turn"]


def test_the_same_response_from_two_instrumentations_counts_once() -> None:
    """Two spans with one gen_ai.response.id: the second gives nothing."""
    inference = CallInference(SETTINGS)
    assert _feed(inference, _call(1000, response_id="r1"), _call(1000, response_id="r1")) == [
        "turn"
    ]


def test_annotate_names_the_evidence_on_inferred_compactions_only() -> None:
    """Findings of an inferred compaction get its evidence and key; others are left alone."""
    inference = CallInference(SETTINGS)
    assert inference.annotate(None) is None
    state = ConversationState(SETTINGS, window=0.0)
    items = [_call(7000), _call(7200, finish="stop", tools_offered=False), _call(7100)]
    items[0].call.tools_offered = True  # type: ignore[union-attr]
    state.offer(items)
    applied = state.drain()
    compaction = next(a.compaction for a in applied if a.compaction is not None)
    findings: list[Finding] = list(compaction.findings)
    findings += [f for a in applied if a.turn and a.turn.settled for f in a.turn.settled.findings]
    assert any(f.kind is FindingKind.INEFFECTIVE_COMPACTION for f in findings)
    assert all("calls grouped by trace" in f.reason for f in findings)
    assert inference.annotate(compaction) is compaction  # not this inference's compaction


def test_loose_calls_group_by_service_and_model_split_by_a_gap() -> None:
    """Calls with no key: one conversation per service and model until a long pause."""
    grouper = LooseGrouper(100, gap=60.0)
    keys = []
    for seconds in (0, 30, 10, 200):
        item = _call(100)
        item.time_ns = seconds * 10**9
        keys.append(grouper.key(item))
    assert keys[0] == keys[1] == keys[2] != keys[3]


def test_state_places_loose_calls_once_and_skips_repeats() -> None:
    """A loose call is placed once; the same span again, or the same response, is a duplicate."""
    skipped: list[ProcessorReason] = []
    state = ConversationState(SETTINGS, window=0.0, on_skip=lambda _i, r: skipped.append(r))
    item = _call(100, response_id="a")
    item.call.loose = True  # type: ignore[union-attr]
    state.place([item])
    placed = item.conversation_id
    state.place([item])
    assert item.conversation_id == placed
    assert item.call.key_source == "service_model_gap"  # type: ignore[union-attr]
    again = _call(100, response_id="a")
    again.conversation_id = placed
    state.offer([item, item, again])
    applied = state.drain()
    assert [a.item.kind for a in applied] == [ItemKind.TURN]
    assert skipped == [ProcessorReason.DUPLICATE, ProcessorReason.DUPLICATE]
