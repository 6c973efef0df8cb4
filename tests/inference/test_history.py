"""Conversation and rewrite inference over message histories (no SDK involved)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from otel_compaction.inference import messages
from otel_compaction.inference.history import HistoryTracker
from otel_compaction.inference.messages import describe
from otel_compaction.semconv import CompactionMode


@contextmanager
def _digested(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, Any]]:
    """The values :func:`value_digest` is asked for (a message's key is its digest)
    while the block runs, by id (held, so no id is reused)."""
    seen: dict[int, Any] = {}
    real = messages.value_digest

    def counted(value: Any, depth: int = 0) -> tuple[int, int]:
        seen[id(value)] = value
        return real(value, depth)

    with monkeypatch.context() as patch:
        patch.setattr(messages, "value_digest", counted)
        yield seen


def _grow(history: list[Any], i: int) -> None:
    history.append(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {}}],
        }
    )
    history.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 100}],
        }
    )


def test_only_new_messages_are_described_on_an_extension() -> None:
    """A call extending the last history brings only its new messages."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    first = tracker.place(None, "system", history)
    _grow(history, 1)
    second = tracker.place(None, "system", history)
    assert second.conversation_id == first.conversation_id
    assert [f.role for f in second.new_facts] == ["assistant", "user"]
    assert second.new_facts[1].tool_results == (100,)
    assert second.rewrite is None


def test_rebuilt_equal_messages_still_extend() -> None:
    """Fresh dicts equal to the old ones (a framework re-building them) still match."""
    tracker = HistoryTracker()
    history = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "a"}]
    first = tracker.place(None, None, history)
    rebuilt = [dict(m) for m in history] + [{"role": "user", "content": "b"}]
    second = tracker.place(None, None, rebuilt)
    assert second.conversation_id == first.conversation_id
    assert len(second.new_facts) == 1


def test_different_system_prompts_are_different_conversations() -> None:
    """The anchor includes the system prompt."""
    tracker = HistoryTracker()
    a = tracker.place(None, "agent A", [{"role": "user", "content": "task"}])
    b = tracker.place(None, "agent B", [{"role": "user", "content": "task"}])
    assert a.conversation_id != b.conversation_id


def test_given_id_tracks_its_own_history_and_rewrites() -> None:
    """With an id given, the rewrite is still inferred against that conversation's history."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(4):
        _grow(history, i)
        placement = tracker.place("given", None, history)
    assert placement.conversation_id == "given"
    assert not placement.inferred
    compacted = [history[0], {"role": "user", "content": "summary"}, *history[-2:]]
    rewritten = tracker.place("given", None, compacted)
    assert rewritten.rewrite is not None
    assert rewritten.rewrite.mode is CompactionMode.LOSSY
    assert rewritten.rewrite.inserted == ({"role": "user", "content": "summary"},)


def test_response_echo_counts_as_the_kept_tail() -> None:
    """The last response, sent back after a summary, is the retained tail, not the summary."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(3):
        _grow(history, i)
        placement = tracker.place(None, None, history)
    answer = {"role": "assistant", "content": [{"type": "text", "text": "found it"}]}
    tracker.remember_response(placement.conversation_id, [answer])
    compacted = [
        history[0],
        {"role": "user", "content": "summary"},
        answer,
        {"role": "user", "content": "ok"},
    ]
    rewritten = tracker.place(None, None, compacted)
    assert rewritten.rewrite is not None
    assert rewritten.rewrite.inserted == ({"role": "user", "content": "summary"},)
    assert rewritten.rewrite.retained == (answer,)
    assert [f.role for f in rewritten.new_facts] == ["user"]


def test_summary_index_continues_a_conversation_whose_head_changed() -> None:
    """A request opening with a known summary continues that summary's conversation."""
    tracker = HistoryTracker()
    first = tracker.place(None, None, [{"role": "user", "content": "task"}])
    tracker.remember_summary(first.conversation_id, "the summary")
    block = {"type": "compaction", "content": "the summary"}
    later = tracker.place(
        None, None, [{"role": "assistant", "content": [block]}, {"role": "user", "content": "go"}]
    )
    assert later.conversation_id == first.conversation_id


def test_find_locates_a_summarizer_request_without_recording_it() -> None:
    """find() names the conversation a summarizer's request is about, and changes nothing."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(3):
        _grow(history, i)
        placement = tracker.place(None, "agent", history)
    request = [*history, {"role": "user", "content": "Summarize the above."}]
    assert tracker.find("You summarize.", request) == placement.conversation_id
    assert tracker.place(None, "agent", history).new_facts == ()


def test_histories_are_bounded_and_expire() -> None:
    """At most max_histories are kept; idle ones are forgotten."""
    now = [0.0]
    tracker = HistoryTracker(max_histories=3, idle_seconds=10, clock=lambda: now[0])
    for i in range(5):
        tracker.place(None, None, [{"role": "user", "content": f"task {i}"}])
    assert len(tracker) == 3
    now[0] = 100.0
    tracker.place(None, None, [{"role": "user", "content": "fresh"}])
    assert len(tracker) == 1


def test_digest_ignores_none_fields_and_key_order() -> None:
    """A pydantic-dumped block and the hand-written dict of it have the same key."""
    written = {"content": [{"text": "hi", "type": "text"}], "role": "assistant"}
    dumped = {"role": "assistant", "content": [{"type": "text", "text": "hi", "citations": None}]}
    assert describe(written).key == describe(dumped).key
    assert (
        describe(written).key
        != describe({"role": "user", "content": [{"type": "text", "text": "hi"}]}).key
    )


def test_a_retry_from_an_earlier_point_is_no_compaction() -> None:
    """Replacing the last turn (a retry from a checkpoint) continues without a rewrite."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(4):
        _grow(history, i)
        placement = tracker.place(None, None, history)
    retry = [*history[:-2], {"role": "user", "content": "a different tool result"}]
    again = tracker.place(None, None, retry)
    assert again.conversation_id == placement.conversation_id
    assert again.rewrite is None
    assert [f.role for f in again.new_facts] == ["user"]


def test_a_middle_message_replaced_in_place_is_a_rewrite_not_an_extension() -> None:
    """The history's copy is compared whole: a tool output cleared in the caller's list
    (same length, one message swapped) is seen, and a failed match leaves the copy as it
    was, so the next request is compared with the last one really sent."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    for i in range(6):
        _grow(history, i)
    first = tracker.place(None, "system", history)
    history[2] = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "[cleared]"}],
    }
    _grow(history, 6)
    second = tracker.place(None, "system", history)
    assert second.conversation_id == first.conversation_id
    assert second.rewrite is not None
    assert second.rewrite.mode is CompactionMode.PRUNE
    _grow(history, 7)
    third = tracker.place(None, "system", history)
    assert third.rewrite is None
    assert [f.role for f in third.new_facts] == ["assistant", "user"]


def test_a_tuple_history_extends_like_a_list() -> None:
    """Requests may carry a tuple of messages; the comparison does not depend on it."""
    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    first = tracker.place(None, "system", tuple(history))
    _grow(history, 1)
    second = tracker.place(None, "system", tuple(history))
    assert second.conversation_id == first.conversation_id
    assert len(second.new_facts) == 2
    assert second.rewrite is None


def test_the_tail_index_follows_the_last_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """After extensions, exactly the last TAIL_KEYS keys point at the conversation once the
    index is read; the continuing calls themselves computed no key of their new messages."""
    from otel_compaction.inference.history import TAIL_KEYS

    tracker = HistoryTracker()
    history: list[Any] = [{"role": "user", "content": "task"}]
    tracker.place(None, "system", history)
    with _digested(monkeypatch) as keyed:
        for i in range(10):
            _grow(history, i)
            placement = tracker.place(None, "system", history)
            assert len(placement.new_facts) == 2
    assert not any(id(m) in keyed for m in history[1:])
    cid = placement.conversation_id
    # A request of another system prompt carrying one message is found by the tail alone.
    found = [tracker.find("another agent", [message]) for message in history]
    assert found == [None] * (len(history) - TAIL_KEYS) + [cid] * TAIL_KEYS


def test_messages_kept_over_all_histories_are_bounded() -> None:
    """Histories hold the agent's message objects: beyond ``max_messages`` the least
    recently used ones are forgotten, never the conversation just placed."""
    tracker = HistoryTracker(max_messages=10)

    def start(task: int) -> tuple[list[Any], str]:
        history: list[Any] = [{"role": "user", "content": f"task {task}"}]
        for i in range(2):
            _grow(history, 100 * task + i)  # no message shared between the conversations
        return history, tracker.place(None, "system", history).conversation_id

    histories, ids = zip(*(start(task) for task in range(3)), strict=True)
    assert len(tracker) == 2  # 5 messages each: the first conversation went
    assert [tracker.find("system", h) for h in histories] == [None, ids[1], ids[2]]
    big = histories[2]
    for i in range(2, 10):
        _grow(big, 200 + i)
    placement = tracker.place(None, "system", big)
    assert len(tracker) == 1  # the current one stays even above the bound
    assert tracker.find("system", big) == ids[2]
    assert placement.rewrite is None
    assert len(placement.new_facts) == 16
    # Forgetting the big history gives its 21 messages back: two new conversations of
    # 5 messages each fit the bound together.
    later = [start(task)[1] for task in (3, 4)]
    assert len(tracker) == 2
    assert tracker.find("system", big) is None
    assert [tracker.find("system", h) for h in histories] == [None, None, None]
    assert len(set(later)) == 2
