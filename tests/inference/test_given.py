"""The history tracker reads nothing ambient: what it is given, and what it does alone."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from otel_compaction.inference import history
from otel_compaction.inference.history import HistoryTracker


def _requests() -> list[tuple[str, list[Any]]]:
    return [
        ("agent A", [{"role": "user", "content": "first task"}]),
        ("agent B", [{"role": "user", "content": "second task"}]),
        ("agent A", [{"role": "user", "content": "first task"}, {"role": "user", "content": "go"}]),
    ]


def test_alone_the_same_requests_get_the_same_ids() -> None:
    """Two trackers given no id minting place the same requests under the same ids."""
    runs = []
    for _ in range(2):
        tracker = HistoryTracker()
        runs.append([tracker.place(None, s, m).conversation_id for s, m in _requests()])
    assert runs[0] == runs[1] == ["conv-1", "conv-2", "conv-1"]


def test_new_ids_come_from_the_minting_given() -> None:
    """A new conversation takes the id ``new_id`` mints; a continued one keeps its own."""
    minted = iter(["a-1", "a-2"])
    tracker = HistoryTracker(new_id=lambda: next(minted))
    assert [tracker.place(None, s, m).conversation_id for s, m in _requests()] == [
        "a-1",
        "a-2",
        "a-1",
    ]


def test_the_recent_conversations_go_where_the_host_keeps_them() -> None:
    """Each placement is noted, the most recent last, in the ``recent`` store given (here a
    context variable, as the instrumentation gives), and only there."""
    recent: ContextVar[tuple[str, ...]] = ContextVar("recent", default=())
    tracker = HistoryTracker(recent=recent)
    for system, messages in _requests():
        tracker.place(None, system, messages)
    assert recent.get() == ("conv-2", "conv-1")


def test_idleness_is_measured_by_the_clock_given() -> None:
    """Without a clock nothing expires; with one, a history idle past ``idle_seconds`` goes."""
    alone = HistoryTracker(idle_seconds=0.0)
    now = [0.0]
    clocked = HistoryTracker(idle_seconds=10.0, clock=lambda: now[0])
    for tracker in (alone, clocked):
        tracker.place(None, "agent", [{"role": "user", "content": "task"}])
    now[0] = 11.0
    for tracker in (alone, clocked):
        tracker.place(None, "agent", [{"role": "user", "content": "another task"}])
    assert (len(alone), len(clocked)) == (2, 1)


def test_the_anchor_cache_holds_a_bounded_number_of_characters() -> None:
    """The facts of anchor messages are cached with the messages themselves: huge tasks are
    kept up to ``MAX_HEAD_CHARS`` characters, not ``MAX_HEADS`` of them."""
    tracker = HistoryTracker()
    size = history.MAX_HEAD_CHARS // 3
    for n in range(8):
        task = {"role": "user", "content": f"{n} " + "x" * size}
        tracker.place(None, "agent", [task])
    heads = tracker._placer.heads
    assert heads.nbytes <= history.MAX_HEAD_CHARS
    assert len(heads) == 2
