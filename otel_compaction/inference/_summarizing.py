"""Step 0 of the placement (``inference.history``): a summarizer's call and its answer.

A request that is a summarizer's call (``inference.summarizer``) is placed in the
conversation it draws on and remembered nowhere; the request that later carries the
summarizer's answer is that conversation's compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from otel_compaction._bounded import BoundedMap
from otel_compaction.inference._placement import Asking, History, Placement, Request, sent_back
from otel_compaction.inference._store import HistoryStore
from otel_compaction.inference.messages import MessageFacts, describe, ends, text_of
from otel_compaction.inference.rewrite import Rewrite, summarized
from otel_compaction.inference.summarizer import (
    SNIPPET_MESSAGES,
    SYSTEM_ROLES,
    TRANSCRIPT_CHARS,
    asks_to_summarize,
    carries_text,
    carrying,
    last_text,
    system_keys,
    system_text,
)

RECENT_SUMMARIZED = 8
"""The process's most recently used conversations a summarizer's call is matched against
besides those of its own thread or task (``inference.summarizer``)."""
DRAWN_MESSAGES = 16
"""Messages at each end of a candidate history that a summarizer's call is looked for in:
a summarizer is sent the conversation from its start (or its last summary) up to a cut,
or its latest messages, so it carries one of the history's first or last ones; the rest of
the history is not read for it, so a summarizer's call after long conversations costs what
it costs after short ones."""


def recent_histories(store: HistoryStore, recent: Sequence[str]) -> list[History]:
    """The conversations a summarizer's call may draw on, the likeliest first: those
    last placed in the caller's thread or task (``recent``, the most recent last), then
    the most recently used (a framework may make each model call in a task of its own,
    so the summarizer's context need not have seen the agent's calls)."""
    found = [store.get(cid) for cid in reversed(recent)]
    ordered = [history for history in found if history is not None]
    for history in store.most_recent(RECENT_SUMMARIZED):
        if history not in ordered:
            ordered.append(history)
    return ordered


def summarizer_of(
    asking: Asking | None,
    candidates: Sequence[History],
    request: Request,
    *,
    inferred: bool = True,
) -> Placement | None:
    """The placement of a request that is a summarizer's call drawing on one of
    ``candidates`` by its own evidence: no tools offered, a summarize instruction in its
    last message, or in a system prompt that is not the conversation's own."""
    if asking is None or asking.tools or not candidates:
        return None
    system_key, facts, msgs = request.system_key, request.facts, request.messages
    in_last = asks_to_summarize(last_text(facts))
    if not in_last and not asks_to_summarize(system_text(asking.system, facts)):
        return None
    keys = system_keys(system_key, facts)
    for history in candidates:
        if not in_last and system_keys(history.system_key, history.facts) == keys:
            continue  # the agent's own prompt asks for summaries: its turn
        if draws_on(history, facts, msgs):
            return summarizer_placement(history.conversation_id, facts, inferred)
    return None


def forced_summarizer(
    store: HistoryStore,
    recent: Sequence[str],
    given_id: str | None,
    messages: Sequence[Any],
    new_id: Callable[[], str],
) -> Placement:
    """A call a framework's summarization hook made: in the conversation it draws on
    (the given one, else the most recent of the caller's thread or task it carries
    messages of, else the most recent), remembered nowhere."""
    msgs = tuple(messages)
    facts = [describe(m) for m in msgs]
    history = store.get(given_id) if given_id is not None else None
    if history is None and given_id is None:
        found = recent_histories(store, recent)
        drawn = (h for h in found if draws_on(h, facts, msgs))
        history = next(drawn, found[0] if found else None)
    cid = history.conversation_id if history is not None else None
    cid = cid or given_id or new_id()
    return summarizer_placement(cid, facts, given_id is None)


def asks_after(asking: Asking | None, history: History, new: list[MessageFacts]) -> bool:
    """An extension of ``history`` that is a summarizer's call: in place of the response
    it got, a message asking to summarize it, with no tools offered."""
    if not history.expected or not new or asking is None or asking.tools:
        return False
    if any(f.is_assistant or f.tool_results for f in new):
        return False
    return asks_to_summarize(last_text(new))


def carrying_output(
    outputs: BoundedMap[str, str],
    store: HistoryStore,
    request: Request,
    only: str | None = None,
) -> tuple[History, Rewrite | None] | None:
    """The conversation whose summarizer's answer (``outputs``: its opening, per
    conversation) the request carries, and the rewrite around it (None
    when it replaced nothing); None when it carries none."""
    if not len(outputs):
        return None
    facts, msgs = request.facts, request.messages
    for cid, needle in reversed(outputs.items()):
        history = store.get(cid)
        if history is None or (only is not None and cid != only):
            continue
        at = carrying(msgs, needle)
        if at is None:
            continue
        outputs.pop(cid)
        old_facts, old_messages = sent_back(history)
        return history, summarized(old_facts, facts, old_messages, msgs, at)
    return None


def draws_on(history: History, facts: Sequence[MessageFacts], msgs: Sequence[Any]) -> bool:
    """Whether a request carries messages of ``history`` (beyond its system prompt) among
    its first or last :data:`DRAWN_MESSAGES`, or the text of its latest ones (a transcript
    pasted into a prompt)."""
    drawn = ends(history.facts, DRAWN_MESSAGES)
    own = {f.key for f in drawn if f.role not in SYSTEM_ROLES}
    if any(f.role not in SYSTEM_ROLES and f.key in own for f in facts):
        return True
    text = "\n".join(text_of(m) for m in msgs[-2:])[-TRANSCRIPT_CHARS:]
    return carries_text(text, [*history.messages[-SNIPPET_MESSAGES:], *history.expected])


def summarizer_placement(cid: str, facts: Sequence[MessageFacts], inferred: bool) -> Placement:
    """A summarizer's call in ``cid``: no new facts, nothing remembered."""
    chars = sum(f.chars for f in facts)
    return Placement(cid, inferred, (), context_chars=chars, summarizer=True)
