"""ConversationState: reorder window, de-duplication, late spans, bounds."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from otel_compaction._bounded import RecentKeys
from otel_compaction.config import Settings
from otel_compaction.otlp.extract import Item, ItemKind, spans_to_items
from otel_compaction.otlp.state import Applied, ConversationState, ReorderWindow
from otel_compaction.semconv import ProcessorReason
from tests.processor.golden import TESTDATA, read_requests


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _requests(name: str) -> list[Any]:
    return [r for _, r in read_requests(TESTDATA / f"{name}.traces.jsonl")]


def test_a_replayed_compaction_is_not_counted_twice_after_dedupe_memory_forgets() -> None:
    """A compaction id the engine already recorded is a duplicate even with no span-id memory."""
    state = ConversationState(Settings(), window=0.0, dedupe_memory=0)
    request = _requests("boundary_000")
    items = [i for r in request for i in spans_to_items(r)]
    state.offer(items)
    first = state.step()
    state.offer([i for r in request for i in spans_to_items(r)])
    second = state.step()
    assert sum(a.compaction is not None for a in first) == 1
    assert not any(a.compaction is not None for a in second)
    assert not any(a.turn is not None for a in second)  # all late: turns already applied


def test_a_turn_older_than_the_conversation_is_late() -> None:
    """A turn whose index the conversation already passed is skipped as late, and counted."""
    skipped: list[ProcessorReason] = []
    state = ConversationState(
        Settings(), window=0.0, on_skip=lambda item, reason: skipped.append(reason)
    )
    items = [i for r in _requests("healthy") for i in spans_to_items(r)]
    turns = [i for i in items if i.turn is not None]
    state.offer(turns[5:10])
    state.step()
    state.offer(turns[2:3])
    assert state.step() == []
    assert skipped == [ProcessorReason.LATE]


def test_a_later_runs_compaction_below_the_mark_is_late_one_delivered_late_applies() -> None:
    """A compaction numbered below the mark applies when it started before the mark's turn
    (delivered late), and is late when it started after it: another run under the same id,
    whose compactions applied at the current turn made livelocks of 0-turn intervals."""
    skipped: list[ProcessorReason] = []
    state = ConversationState(
        Settings(), window=0.0, on_skip=lambda item, reason: skipped.append(reason)
    )
    items = [i for r in _requests("livelock_004") for i in spans_to_items(r)]
    first, second = [i for i in items if i.kind is ItemKind.COMPACTION][:2]
    turns = {i.turn_index: i for i in items if i.turn_index is not None and i.turn is not None}
    assert first.turn_index is not None
    assert second.turn_index is not None

    def apply(*batch: Item) -> list[Applied]:
        state.offer(batch)
        return state.step()

    apply(*(turns[n] for n in range(1, first.turn_index + 1)))
    assert [a.compaction is not None for a in apply(first)] == [True]  # at the mark
    apply(*(turns[n] for n in range(first.turn_index + 1, second.turn_index + 2)))
    assert [a.compaction is not None for a in apply(second)] == [True]  # delivered late
    rerun = copy.copy(first)  # the same compaction, from a run that started afterwards
    assert rerun.compaction is not None
    rerun.compaction = dataclasses.replace(rerun.compaction, compaction_id="a later run's")
    rerun.time_ns, rerun.dedupe_key = turns[second.turn_index + 1].time_ns + 1, -1
    assert apply(rerun) == []
    assert skipped == [ProcessorReason.LATE]


def test_the_window_holds_items_until_it_closes() -> None:
    """Items wait ``window`` seconds from the first one of their conversation, then apply."""
    clock = Clock()
    state = ConversationState(Settings(), window=2.0, clock=clock)
    items = [i for r in _requests("healthy") for i in spans_to_items(r)]
    state.offer(items[:3])
    clock.now += 1.5
    state.offer(items[3:6])
    assert state.step() == []
    clock.now += 0.6
    assert len(state.step()) == 6
    assert state.pending == 0


def test_reorder_window_releases_conversations_in_arrival_order() -> None:
    """The earliest conversation's window closes first; later ones keep waiting."""
    window = ReorderWindow(1.0)
    items = [i for r in _requests("healthy") for i in spans_to_items(r)][:2]
    items[1].conversation_id = "other"
    window.add(items[:1], 0.0)
    window.add(items[1:], 0.5)
    assert [cid for cid, _ in window.due(1.2)] == [items[0].conversation_id]
    assert len(window) == 1


def test_recent_keys_forget_the_oldest() -> None:
    """The dedupe memory is bounded and forgets in arrival order."""
    keys = RecentKeys(2)
    assert keys.add(1)
    assert keys.add(2)
    assert not keys.add(1)
    assert keys.add(3)
    assert keys.add(1)  # 1 was forgotten when 3 came
    assert len(keys) == 2


def test_conversation_count_is_bounded() -> None:
    """More conversations than ``max_conversations`` evict the least recent."""
    state = ConversationState(Settings(max_conversations=10), window=0.0)
    items = [i for r in _requests("healthy") for i in spans_to_items(r) if i.turn is not None]
    for n, item in enumerate(items[:40]):
        item.conversation_id = f"c{n}"
        item.turn_index = 1
    state.offer(items[:40])
    state.step()
    assert len(state.registry) == 10
