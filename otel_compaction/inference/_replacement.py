"""Step 5 of the placement (``inference.history``): a whole-history replacement.

A request that is nothing but user or system text never seen continues a conversation
recently placed in the same thread or asyncio task when it carries that conversation's
text (``inference.carry``): the thresholds below, stricter far from pressure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_compaction.inference import carry
from otel_compaction.inference._placement import History, Request, response_facts, sent_back
from otel_compaction.inference._store import HistoryStore
from otel_compaction.inference.messages import MessageFacts, text_of
from otel_compaction.inference.rewrite import (
    MIN_DROPPED_TURNS,
    Rewrite,
    replaced_whole,
    whole_shape,
)
from otel_compaction.inference.summarizer import SUMMARY_FALL, marked_summary
from otel_compaction.lineage.text import words

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
FALLS_SCAN = 256
"""Messages of a candidate history, from its end, whose roles are read to count the model
turns a replacement of it would drop (two are needed far from pressure): an agent's last
256 messages hold two model turns unless they are one huge batch of tool results. The
rest of the history is not read for it."""

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
    request replaces, by the rule of the module docstring; when none does, the signature
    of the request's text read for the match (kept if the request opens a conversation:
    read once), if any. ``pressed``: whether a history was at pressure.

    Each candidate is judged on a bounded part of its history (:class:`_Candidate`, the
    carry-over measure's signature); the replacement itself, a copy of the whole history,
    is built only for the one chosen."""
    system_key, model, facts = request.system_key, request.model, request.facts
    if not carry.may_replace(facts) or _too_short(request):
        return None, None
    found: list[tuple[float, int, History]] = []
    marked: list[tuple[History, _Candidate]] = []
    reading: carry.Reading | None = None
    text: str | None = None
    opening = 0
    for order, cid in enumerate(reversed(recent)):
        history = store.get(cid)
        if history is None or history.system_key != system_key or history.model != model:
            continue
        candidate = _Candidate.of(history, facts)
        if candidate is None:
            continue
        at_pressure = pressed(history)
        if not at_pressure and not candidate.falls():
            continue  # far from pressure, a replacement that reclaims little is none
        inserted = request.messages[candidate.head :]
        if reading is None:
            reading = carry.Reading(inserted)
            opening = candidate.head
        if text is None:
            text = "\n".join(text_of(m) for m in inserted)
        if marked_summary(text) and candidate.falls():
            marked.append((history, candidate))  # says it is a summary, much shorter: no carry
            continue
        if marked or (not at_pressure and candidate.restates_task_only):
            continue  # a marked summary found wins; far from pressure, another agent's task
        carried = _carried(store, reading, history, candidate.dropped)
        needed = WHOLE_HISTORY_CARRY if at_pressure else WHOLE_HISTORY_CARRY_ALONE
        if carried >= needed:
            found.append((-carried, order, history))  # the best carried, the most recent on ties
    if marked and reading is not None:
        found = _by_carry(store, reading, marked)
    for _, _, history in sorted(found, key=lambda f: f[:2]):
        rewrite = replacement(history, facts, request.messages)
        if rewrite is not None:
            return (history, rewrite), None
    return None, reading.as_task(opening) if reading is not None else None


def _too_short(request: Request) -> bool:
    """Whether no candidate can take the request, read once rather than per candidate: its
    text has fewer than :data:`carry.CARRY_MIN_WORDS` words (it carries nothing), and it
    does not say it is a summary after any of its leading system messages a candidate
    could keep (the one-line task that opens most conversations)."""
    messages, facts = request.messages, request.facts
    if sum([f.chars for f in facts]) > carry.CARRY_TEXT_CHARS:
        return False  # the measure would read its first part only: left to it
    texts = [text_of(m) for m in messages]
    if len(words("\n".join(texts))) >= carry.CARRY_MIN_WORDS:
        return False
    kept = 0
    while kept < len(facts) and facts[kept].role == "system":
        kept += 1
    return not any(marked_summary("\n".join(texts[head:])) for head in range(kept + 1))


def _by_carry(
    store: HistoryStore, reading: carry.Reading, marked: list[tuple[History, _Candidate]]
) -> list[tuple[float, int, History]]:
    """The conversations a marked summary may replace (the most recently placed first),
    ranked by how much of each history it carries: agents that share a thread and a
    summarizer's template write the same marker, and the most recent is not always the one
    summarized. One alone is taken unmeasured."""
    if len(marked) == 1:
        return [(-1.0, 0, marked[0][0])]
    return [
        (-_carried(store, reading, history, candidate.dropped), order, history)
        for order, (history, candidate) in enumerate(marked)
    ]


def _carried(store: HistoryStore, reading: carry.Reading, history: History, dropped: int) -> float:
    """How much of the replacing text ``history`` carries (its signature brought up to
    date within the call's budget): the share of the text's word 5-grams found in the
    history, counted only when the history *beyond its task* shows in it
    (:data:`WHOLE_HISTORY_REST`) or the task is restated whole
    (:data:`WHOLE_HISTORY_TASK`); else 0. A fresh task written from the same template
    as the old one shares the template's words with the old task, nothing with the
    tool outputs, and restates none of the old task's particulars. ``dropped``: the
    messages replaced, last response included. A text too short to carry anything
    (:data:`carry.CARRY_MIN_WORDS`) reads nothing of the history."""
    if reading.short:
        return 0.0
    head = len(history.messages) + len(history.expected) - dropped
    signature = reading.sign(history.carry, history.messages, head)
    if signature is None:
        return 0.0
    if history.carry is not signature:
        store.keep_signature(history, signature)
    store.signed(history)
    reading.respond(signature, history.expected)
    return reading.carried(signature, WHOLE_HISTORY_REST, WHOLE_HISTORY_TASK)


@dataclass(slots=True)
class _Candidate:
    """What the rule reads of one candidate history, a bounded part of it: its system
    messages, the ends :func:`whole_shape` compares, its last :data:`FALLS_SCAN` messages'
    roles (only when the rule asks whether the replacement falls) and its sizes as
    remembered."""

    head: int
    """The history's system messages (kept by the replacement)."""
    dropped: int
    """Messages replaced, the last response included."""
    restates_task_only: bool
    """The replacing text is no longer than :data:`WHOLE_HISTORY_TASK_LENGTH` times the
    task it replaces: room for the task restated, none for what the history found. Never
    when the history opens with an earlier compaction's text: its first message is a
    summary, not a task, and the next summary is naturally about as long."""
    history: History
    sent: list[MessageFacts]
    inserted_chars: int
    dropped_chars: int
    _falls: bool | None = None
    """:meth:`falls`, once asked."""

    @classmethod
    def of(cls, history: History, facts: Sequence[MessageFacts]) -> _Candidate | None:
        """The candidate, when the request has the shape of a replacement of ``history``."""
        sent = response_facts(history)
        old = history.facts
        shape = whole_shape(old, facts, sent)
        if shape is None:
            return None
        head, end = shape
        dropped_chars = (
            history.chars - sum(f.chars for f in old[:head]) + sum(f.chars for f in sent)
        )
        inserted_chars = sum(f.chars for f in facts[head:end])
        task = (old[head] if head < len(old) else sent[head - len(old)]).chars
        return cls(
            head,
            len(history.messages) + len(history.expected) - head,
            not history.opens_with_compaction
            and inserted_chars <= WHOLE_HISTORY_TASK_LENGTH * task,
            history,
            sent,
            inserted_chars,
            dropped_chars,
        )

    def falls(self) -> bool:
        """The replacement reclaims much: at least two model turns replaced (among the
        history's last :data:`FALLS_SCAN` messages and its response), and its text at most
        :data:`SUMMARY_FALL` of theirs."""
        if self._falls is None:
            old = self.history.facts
            last = old[max(self.head, len(old) - FALLS_SCAN + len(self.sent)) :]
            turns = sum(1 for f in (*last, *self.sent) if f.is_assistant)
            self._falls = (
                turns >= MIN_DROPPED_TURNS
                and self.inserted_chars <= SUMMARY_FALL * self.dropped_chars
            )
        return self._falls
