"""The compaction a request shows against one remembered history (steps 3 and 5).

Which rewrite shapes count depends on pressure: one assistant turn replaced suffices
when the conversation was at pressure (``at_pressure``, given by the host: its last
measured context plus its last response against the threshold).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from otel_compaction.inference._placement import History, response_facts, sent_back
from otel_compaction.inference._replacement import replacement
from otel_compaction.inference.messages import MessageFacts
from otel_compaction.inference.rewrite import (
    MIN_DROPPED_TURNS,
    MIN_DROPPED_TURNS_AT_PRESSURE,
    Rewrite,
    infer_rewrite,
)
from otel_compaction.signals.tokens import tokens_for_chars

AtPressure = Callable[[str, int], bool] | None
"""Whether a conversation's last measured context plus ``tokens`` more is at pressure
(None: never)."""


def best_rewrite(
    at_pressure: AtPressure,
    candidates: Sequence[History],
    facts: list[MessageFacts],
    msgs: tuple[Any, ...],
) -> tuple[History, Rewrite] | None:
    """The candidate whose history the request rewrites keeping the most of it verbatim
    (messages kept, then their characters, tool results included), the most recently
    used on ties: two agents with the same replies but their own tool outputs each
    keep only their own tail whole."""
    best: tuple[tuple[int, int], History, Rewrite] | None = None
    for history in candidates:
        rewrite = rewrite_of(at_pressure, history, facts, msgs)
        if rewrite is None:
            continue
        score = (len(rewrite.retained), rewrite.retained_chars)
        if best is None or score > best[0]:
            best = (score, history, rewrite)
    return None if best is None else (best[1], best[2])


def rewrite_of(
    at_pressure: AtPressure, history: History, facts: list[MessageFacts], msgs: tuple[Any, ...]
) -> Rewrite | None:
    """The rewrite of ``history`` into the request, if it is a compaction shape: one
    assistant turn replaced suffices when the conversation was at pressure."""
    old_facts, old_messages = sent_back(history)
    pressed = was_at_pressure(at_pressure, history)
    turns = MIN_DROPPED_TURNS_AT_PRESSURE if pressed else MIN_DROPPED_TURNS
    return infer_rewrite(old_facts, facts, old_messages, msgs, turns)


def response_replaced(
    at_pressure: AtPressure, history: History, new: list[MessageFacts]
) -> Rewrite | None:
    """A request that extends the last one with user text in place of the response it
    got (a summary one call after the last request), at pressure: the compaction that
    replaced the response. ``history.messages`` already holds the new messages."""
    if not history.expected or any(f.is_assistant or f.tool_results for f in new):
        return None  # the response was sent back (or none was given): an extension
    if not was_at_pressure(at_pressure, history):
        return None
    count = len(history.facts)
    old_facts, old_messages = sent_back(history, count)
    return infer_rewrite(
        old_facts,
        [*history.facts, *new],
        old_messages,
        tuple(history.messages),
        MIN_DROPPED_TURNS_AT_PRESSURE,
    )


def shrinking(
    at_pressure: AtPressure, history: History, facts: list[MessageFacts], msgs: tuple[Any, ...]
) -> Rewrite | None:
    """A whole-history replacement of a conversation the application named, if it
    shrinks what it replaces or came at pressure (else a new start under the id)."""
    rewrite = replacement(history, facts, msgs)
    if rewrite is None or rewrite.inserted_chars < rewrite.dropped_chars:
        return rewrite
    return rewrite if was_at_pressure(at_pressure, history) else None


def was_at_pressure(at_pressure: AtPressure, history: History) -> bool:
    """The conversation's last measured context plus its last response, at pressure."""
    if at_pressure is None:
        return False
    pending = sum([f.chars for f in response_facts(history)])
    return at_pressure(history.conversation_id, tokens_for_chars(pending))
