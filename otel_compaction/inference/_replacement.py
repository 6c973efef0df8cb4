"""Step 5 of the placement (``inference.history``): a whole-history replacement.

A request that is nothing but user or system text never seen continues a conversation
recently placed in the same thread or asyncio task when it carries that conversation's
text (``inference.carry``): the thresholds below, stricter far from pressure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from otel_compaction.inference import carry
from otel_compaction.inference._placement import History, Request, sent_back
from otel_compaction.inference._store import HistoryStore
from otel_compaction.inference.messages import MessageFacts, describe, text_of
from otel_compaction.inference.rewrite import MIN_DROPPED_TURNS, Rewrite, replaced_whole
from otel_compaction.inference.summarizer import SUMMARY_FALL, marked_summary

WHOLE_HISTORY_CARRY = 0.3
"""Share of a replacement's word 5-grams that must occur in the text of the conversation
it replaces (tool outputs, the task, the last response). A summary restates the task
and what the tools found; a fresh task shares almost none of another's history."""
WHOLE_HISTORY_REST = 0.15
"""Share of the replacing text's word 5-grams that must come from the replaced history
beyond its task (tool outputs, replies), unless the task is restated whole."""
WHOLE_HISTORY_TASK = 0.8
"""Share of the replaced task's word 5-grams the replacing text must restate when little
of the rest of the history shows in it (a compaction one call after the task)."""
WHOLE_HISTORY_TASK_LENGTH = 1.5
"""Far from pressure, a replacing text at most this many times as long as the task it
replaces is a task (another agent's, with the same statement), not a summary of the work."""
WHOLE_HISTORY_CARRY_ALONE = 0.6
"""The same share when the replaced conversation was not at pressure (a compaction on a
schedule, or one whose last step added more than the measured context shows)."""

Found = tuple[History, Rewrite]


def replacement(
    history: History, facts: list[MessageFacts], msgs: tuple[Any, ...]
) -> Rewrite | None:
    """The whole-history replacement of ``history`` the request shows, if any."""
    old_facts, old_messages = sent_back(history)
    return replaced_whole(old_facts, facts, old_messages, msgs)


def replaced(
    store: HistoryStore,
    recent: Sequence[str],
    request: Request,
    pressed: Callable[[History], bool],
) -> tuple[Found | None, carry.Signature | None]:
    """The conversation of ``recent`` (the most recent last) whose whole history the
    request replaces, by the rule of the module
    docstring; when none does, the signature of the request's text read for the match
    (kept if the request opens a conversation: read once), if any. ``pressed``: whether
    a history was at pressure."""
    system_key, model, facts, msgs = (
        request.system_key, request.model, request.facts, request.messages
    )  # fmt: skip
    if not carry.may_replace(facts):
        return None, None
    best: tuple[float, History, Rewrite] | None = None
    marked: list[Found] = []
    reading: carry.Reading | None = None
    text: str | None = None
    opening = 0
    for cid in reversed(recent):
        history = store.get(cid)
        if history is None or history.system_key != system_key or history.model != model:
            continue
        rewrite = replacement(history, facts, msgs)
        if rewrite is None:
            continue
        at_pressure = pressed(history)
        if not at_pressure and not _falls(rewrite):
            continue  # far from pressure, a replacement that reclaims little is none
        if reading is None:
            reading = carry.Reading(rewrite.inserted)
            opening = len(msgs) - len(rewrite.inserted)
        if text is None:
            text = "\n".join(text_of(m) for m in rewrite.inserted)
        if marked_summary(text) and _falls(rewrite):
            marked.append((history, rewrite))  # says it is a summary, much shorter: no carry
            continue
        if marked or (not at_pressure and _restates_task_only(history, rewrite)):
            continue  # a marked summary found first wins; far from pressure, another
            # agent's task (the same statement)
        carried = _carried(store, reading, history, len(rewrite.dropped))
        needed = WHOLE_HISTORY_CARRY if at_pressure else WHOLE_HISTORY_CARRY_ALONE
        if carried >= needed and (best is None or carried > best[0]):
            best = (carried, history, rewrite)
    if marked:
        return _most_carried(store, reading, marked), None
    if best is not None:
        return (best[1], best[2]), None
    return None, reading.as_task(opening) if reading is not None else None


def _most_carried(store: HistoryStore, reading: carry.Reading | None, found: list[Found]) -> Found:
    """Of the conversations a marked summary may replace (the most recently placed first),
    the one whose history it carries most: agents that share a thread and a summarizer's
    template write the same marker, and the most recent is not always the summarized one.
    One alone needs no measure."""
    if len(found) == 1 or reading is None:
        return found[0]
    scored = [(_carried(store, reading, h, len(r.dropped)), n) for n, (h, r) in enumerate(found)]
    return found[max(scored, key=lambda s: (s[0], -s[1]))[1]]


def _carried(store: HistoryStore, reading: carry.Reading, history: History, dropped: int) -> float:
    """How much of the replacing text ``history`` carries (its signature brought up to
    date within the call's budget): the share of the text's word 5-grams found in the
    history, counted only when the history *beyond its task* shows in it
    (:data:`WHOLE_HISTORY_REST`) or the task is restated whole
    (:data:`WHOLE_HISTORY_TASK`); else 0. A fresh task written from the same template
    as the old one shares the template's words with the old task, nothing with the
    tool outputs, and restates none of the old task's particulars. ``dropped``: the
    messages replaced, last response included."""
    head = len(history.messages) + len(history.expected) - dropped
    signature = reading.sign(history.carry, history.messages, head)
    if signature is None:
        return 0.0
    if history.carry is not signature:
        store.keep_signature(history, signature)
    store.signed(history)
    reading.respond(signature, history.expected)
    return reading.carried(signature, WHOLE_HISTORY_REST, WHOLE_HISTORY_TASK)


def _falls(rewrite: Rewrite) -> bool:
    """Whether a whole-history replacement reclaims much: it replaced at least two model
    turns and its text is at most :data:`SUMMARY_FALL` of theirs."""
    turns = sum(1 for m in rewrite.dropped if describe(m).is_assistant)
    return turns >= MIN_DROPPED_TURNS and rewrite.inserted_chars <= (
        SUMMARY_FALL * rewrite.dropped_chars
    )


def _restates_task_only(history: History, rewrite: Rewrite) -> bool:
    """Whether the replacing text is no longer than :data:`WHOLE_HISTORY_TASK_LENGTH` times
    the task it replaces: room for the task restated, none for what the history found.
    Never when the history opens with an earlier compaction's text: its first message is a
    summary, not a task, and the next summary is naturally about as long."""
    if history.opens_with_compaction:
        return False
    task = describe(rewrite.dropped[0]).chars if rewrite.dropped else 0
    return rewrite.inserted_chars <= WHOLE_HISTORY_TASK_LENGTH * task
