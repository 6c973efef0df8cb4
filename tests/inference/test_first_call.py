"""The first call of a new conversation reads its history once, whatever came before:
its work is counted in operations (messages described, marked, digested), not timed."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from otel_compaction.inference import (
    _placement,
    _placer,
    _replacement,
    _rewrites,
    _store,
    _summarizing,
    history,
    messages,
)
from otel_compaction.inference._store import SHARED_TAIL_SCAN, TAIL_KEYS
from otel_compaction.inference.history import HistoryTracker

SYSTEM = "You fix bugs with the tools given."
MODEL = "model-a"


def _agent(tag: str, length: int) -> list[dict[str, Any]]:
    """An agent's history: the task, then (assistant, tool output) pairs. Every history's
    messages have the sizes of every other's when their tags are as long: each of them could
    be a remembered tail's message, by size."""
    history: list[dict[str, Any]] = [{"role": "user", "content": f"Task {tag}: fix the bug."}]
    for step in range((length - 1) // 2):
        history.append({"role": "assistant", "content": f"{tag} step {step:06d} reads"})
        history.append({"role": "user", "content": f"{tag} output {step:06d} " + "x" * 300})
    return history


@contextmanager
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts, while the block runs: messages described by the placement, messages marked
    for the shared-tail lookup, digests asked for from outside a digest, remembered facts
    copied as the old side of a whole-history replacement."""
    counts: Counter[str] = Counter()

    def counting(name: str, real: Callable[..., Any], weight: Callable[..., int]) -> Any:
        def wrapper(*args: Any) -> Any:
            counts[name] += weight(*args)
            return real(*args)

        return wrapper

    with monkeypatch.context() as patch:
        described = counting("described", messages.describe, _one)
        for module in (_placer, _placement, _replacement, _rewrites, _store, _summarizing, history):
            if hasattr(module, "describe"):
                patch.setattr(module, "describe", described)
        copied = counting("copied", _placement.sent_back, lambda h, *c: len(h.facts))
        patch.setattr(_replacement, "sent_back", copied)
        patch.setattr(_store, "lead", counting("marked", messages.lead, _one))
        patch.setattr(messages, "value_digest", counting("keys", messages.value_digest, _top))
        yield counts


def _one(*args: Any) -> int:
    return 1


def _top(value: Any, depth: int = 0) -> int:
    return 1 if depth == 0 else 0


def _first_call(monkeypatch: pytest.MonkeyPatch, recent: int, length: int) -> Counter[str]:
    """The work of the first call of a new ``length``-message conversation after ``recent``
    conversations of ``length`` messages each (their tails indexed by an earlier lookup)."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True, max_messages=10**6)
    for n in range(recent):
        tracker.place(None, SYSTEM, _agent(f"o{n:03d}", length), MODEL)
    tracker.place(None, SYSTEM, _agent("warm", 3), MODEL)  # indexes the tails
    with _counted(monkeypatch) as counts:
        placement = tracker.place(None, SYSTEM, _agent("newc", length), MODEL)
    assert placement.first
    return counts


def test_a_first_call_marks_a_bounded_number_of_messages_however_many_came_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long first call describes each of its messages once and marks at most
    ``2 * SHARED_TAIL_SCAN`` of them for the shared-tail lookup, after 8 short or 64 long
    recent conversations alike."""
    few = _first_call(monkeypatch, 8, 41)
    small = _first_call(monkeypatch, 8, 1_001)
    large = _first_call(monkeypatch, 64, 1_001)
    assert small == large
    assert small["described"] == 1_001  # each message once
    # Its looked-up messages, and the tail of the one history placed since the last lookup.
    assert 0 < small["marked"] <= 2 * SHARED_TAIL_SCAN + TAIL_KEYS
    assert small["keys"] <= few["keys"] + 2 * SHARED_TAIL_SCAN


def test_a_verbatim_tail_kept_by_a_long_compaction_is_still_found() -> None:
    """A compaction that replaced the task with a summary and kept 200 messages verbatim
    continues the conversation: its old last messages sit among the request's last."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True)
    old = _agent("old", 301)
    first = tracker.place(None, SYSTEM, old, MODEL)
    reply = {"role": "assistant", "content": "old step 999999 reads"}
    tracker.remember_response(first.conversation_id, [reply])
    summary = {"role": "user", "content": "Summary of the work so far: the bug is in b.py."}
    compacted = [summary, *old[-200:], reply, {"role": "user", "content": "go on"}]
    assert len(compacted) > 1 + 2 * SHARED_TAIL_SCAN
    placed = tracker.place(None, SYSTEM, compacted, MODEL)
    assert placed.conversation_id == first.conversation_id
    assert not placed.first


def _task_after(monkeypatch: pytest.MonkeyPatch, length: int) -> Counter[str]:
    """The work of a new task (one user message) placed in the thread of 8 conversations of
    ``length`` messages, each answered, none at pressure."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: False, max_messages=10**6)
    for n in range(8):
        placed = tracker.place(None, SYSTEM, _agent(f"o{n:03d}", length), MODEL)
        reply = {"role": "assistant", "content": "Fixed: the bug was in b.py."}
        tracker.remember_response(placed.conversation_id, [reply])
    task = [{"role": "user", "content": "Task newc: the tests of c.py fail, fix them."}]
    with _counted(monkeypatch) as counts:
        placement = tracker.place(None, SYSTEM, task, MODEL)
    assert placement.first
    return counts


def test_a_new_task_reads_no_more_after_long_conversations_than_after_short_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-message first call that could replace the thread's recent histories whole is
    judged against a bounded part of each: no history copied, none described again, as
    many digests after 4,001-message conversations as after 41-message ones."""
    short = _task_after(monkeypatch, 41)
    long = _task_after(monkeypatch, 4_001)
    assert short == long
    assert long["copied"] == 0
    assert long["described"] <= 1 + 8  # the task, and each history's last response


def _summarizer_after(monkeypatch: pytest.MonkeyPatch, length: int) -> Counter[str]:
    """The work of a summarizer's call (no tools, a summarize instruction) that carries the
    task of the oldest of 8 conversations of ``length`` messages in the thread."""
    tracker = HistoryTracker(max_messages=10**6)
    histories = [_agent(f"o{n:03d}", length) for n in range(8)]
    placed = [tracker.place(None, SYSTEM, h, MODEL, tools=True) for h in histories]
    ask = {"role": "user", "content": "Summarize the conversation above for a handoff."}
    with _counted(monkeypatch) as counts:
        call = tracker.place(None, SYSTEM, [histories[0][0], ask], MODEL, tools=False)
    assert call.summarizer
    assert call.conversation_id == placed[0].conversation_id
    return counts


def test_a_summarizer_call_reads_no_more_after_long_conversations_than_after_short_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A summarizer's call is matched against the ends of each recent history, not all of
    it: as many digests after 4,001-message conversations as after 41-message ones."""
    assert _summarizer_after(monkeypatch, 41) == _summarizer_after(monkeypatch, 4_001)


def test_a_recent_history_s_last_response_is_described_once_for_all_new_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The new tasks (long enough to be compared with them) placed one after another in a
    thread read each recent history's last response once: the second task describes only
    its own message."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True, max_messages=10**6)
    for n in range(8):
        placed = tracker.place(None, SYSTEM, _agent(f"o{n:03d}", 41), MODEL)
        reply = {"role": "assistant", "content": "Fixed: the bug was in b.py."}
        tracker.remember_response(placed.conversation_id, [reply])
    texts = (
        "Task a: the tests of c.py fail since the change to the retry handler; find out why "
        "the last event of a stream is dropped, then fix it.",
        "Task b: after a restart the cache layer in d.py returns stale entries for an hour; "
        "make it drop what it loaded before the restart and add a test.",
    )
    tasks = [[{"role": "user", "content": text}] for text in texts]
    counts = []
    for task in tasks:
        with _counted(monkeypatch) as counted:
            assert tracker.place(None, SYSTEM, task, MODEL).first
        counts.append(counted["described"])
    assert counts[0] > 1
    assert counts[1] == 1


@pytest.mark.parametrize("seed", range(5))
def test_a_turn_reports_the_newest_tool_outputs_in_order_read_from_the_end(seed: int) -> None:
    """The tool-output sizes of a turn are its newest ``MAX_ATTENTION_WINDOW``, oldest
    first, as the whole list cut to its end gives them (a message holding several, the
    cut falling among them, included)."""
    from otel_compaction.config import MAX_ATTENTION_WINDOW
    from otel_compaction.instrument._call import _tool_output_tokens
    from otel_compaction.signals.tokens import tokens_for_chars

    rng = random.Random(seed)
    facts = [
        messages.MessageFacts("user", 0, 0, tuple(rng.randint(1, 9_000) for _ in range(k)))
        for k in rng.choices((0, 1, 3, 7), k=rng.choice((10, 200)))
    ]
    every = [c for f in facts for c in f.tool_results]
    expected = tuple(tokens_for_chars(c) for c in every[-MAX_ATTENTION_WINDOW:])
    assert _tool_output_tokens(facts) == expected


def test_a_first_call_reads_only_the_facts_of_its_newest_tool_outputs() -> None:
    """A 2,000-message first call's turn reads the facts of its newest 128 tool outputs,
    not every message's."""
    from collections.abc import Sequence

    from otel_compaction.config import MAX_ATTENTION_WINDOW
    from otel_compaction.instrument._call import _tool_output_tokens

    class Counted(Sequence[messages.MessageFacts]):
        def __init__(self, facts: list[messages.MessageFacts]) -> None:
            self.facts, self.read = facts, 0

        def __len__(self) -> int:
            return len(self.facts)

        def __getitem__(self, index: Any) -> Any:
            self.read += 1
            return self.facts[index]

    counted = Counted([messages.MessageFacts("user", 9, 9, (9,)) for _ in range(2_000)])
    assert len(_tool_output_tokens(counted)) == MAX_ATTENTION_WINDOW
    assert counted.read == MAX_ATTENTION_WINDOW


def test_a_one_line_task_compares_no_recent_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new task of fewer than ``CARRY_MIN_WORDS`` words that does not say it is a summary
    can replace no history: it describes its own message only, none of the recent
    histories' responses, and digests none of their first or last messages."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True, max_messages=10**6)
    for n in range(8):
        placed = tracker.place(None, SYSTEM, _agent(f"o{n:03d}", 41), MODEL)
        reply = {"role": "assistant", "content": "Fixed: the bug was in b.py."}
        tracker.remember_response(placed.conversation_id, [reply])
    task = [{"role": "user", "content": "Task newc: the tests of c.py fail, fix them."}]
    with _counted(monkeypatch) as counts:
        assert tracker.place(None, SYSTEM, task, MODEL).first
    assert counts["described"] == 1
    assert counts["keys"] <= 1 + TAIL_KEYS  # its own, the tail of the last history placed
