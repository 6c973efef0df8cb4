"""The placement of one request, step by step (the rule of ``inference.history``).

One :class:`Placer` per tracker, called under the tracker's lock: the request's anchor,
the candidates that share it, and in order the steps of the rule, each remembering the
request's history where it places it. The memories it keeps besides the histories are
bounded maps (``_bounded``): the facts of anchor messages (in entries and characters,
since they hold the caller's messages), summaries, summarizer answers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from otel_compaction._bounded import BoundedMap
from otel_compaction.inference import carry
from otel_compaction.inference._placement import (
    ANCHOR_MESSAGES,
    Asking,
    History,
    Placement,
    Request,
    after_summary,
    anchor_of,
    branch,
    by_response,
    grow,
)
from otel_compaction.inference._replacement import replaced
from otel_compaction.inference._rewrites import (
    AtPressure,
    best_rewrite,
    response_replaced,
    rewrite_of,
    shrinking,
    was_at_pressure,
)
from otel_compaction.inference._store import HistoryStore
from otel_compaction.inference._summarizing import (
    asks_after,
    carrying_output,
    recent_histories,
    summarizer_of,
)
from otel_compaction.inference.messages import MessageFacts, describe
from otel_compaction.inference.rewrite import Rewrite, common_head

MAX_SUMMARIES = 4096
"""Compaction summaries remembered (by hash) with their conversation."""
MAX_OUTPUTS = 64
"""Summarizer answers waiting for the request that carries them (one per conversation)."""
MAX_HEADS = 1024
"""Anchor messages whose facts are cached by identity (strong references, bounded)."""
MAX_HEAD_CHARS = 4_000_000
"""Characters of text of the anchor messages cached by identity: the cache holds the
caller's message objects, so a process whose tasks are huge keeps a few of them, not a
thousand (an anchor not cached is described again, at the cost of a first call)."""


def _head_size(entry: tuple[Any, MessageFacts]) -> int:
    """The characters an anchor-cache entry holds (its message's text)."""
    return entry[1].chars


class Placer:
    """Places requests among the histories of ``store`` (not thread-safe: the tracker's
    lock guards it).

    Args:
        store: the remembered histories.
        at_pressure: whether a conversation was at pressure (None: never).
        new_id: mints the id of a new conversation.
    """

    def __init__(
        self, store: HistoryStore, at_pressure: AtPressure, new_id: Callable[[], str]
    ) -> None:
        self.store = store
        self.at_pressure = at_pressure
        self.new_id = new_id
        self.summaries: BoundedMap[int, str] = BoundedMap(MAX_SUMMARIES)
        """Compaction summaries (by hash) and the conversation each continues."""
        self.heads: BoundedMap[int, tuple[Any, MessageFacts]] = BoundedMap(
            MAX_HEADS, max_bytes=MAX_HEAD_CHARS, size=_head_size
        )
        """The facts of anchor messages, by identity (with the message, to check it)."""
        self.outputs: BoundedMap[str, str] = BoundedMap(MAX_OUTPUTS)
        """Per conversation, the opening of a summarizer's answer no request has carried yet."""
        self.asking: Asking | None = None
        """The request being placed (set by the tracker, for the summarizer checks)."""
        self.opening: tuple[tuple[Any, ...], carry.Signature] | None = None
        """A request that matched no recent conversation, with the signature of its text
        read for the match: kept by ``_save`` if the request opens a conversation (read
        once)."""

    def given(
        self, cid: str, system_key: int, messages: Sequence[Any], model: str | None
    ) -> Placement:
        history = self.store.get(cid)
        if history is not None:
            added = grow(history, messages)
            if added is not None:
                return self._extend(history, added, inferred=False)
        msgs = tuple(messages)
        facts = [describe(m) for m in msgs]
        request = Request(system_key, msgs, facts, model)
        if history is None:
            return self._save(cid, request, inferred=False, first=True)
        asked = summarizer_of(self.asking, [history], request, inferred=False)
        if asked is not None:
            return asked
        carried = carrying_output(self.outputs, self.store, request, only=cid)
        if carried is not None:
            start = carried[1].new_start if carried[1] else common_head(history.facts, facts)
            return self._save(cid, request, inferred=False, rewrite=carried[1], start=start)
        pressure = self.at_pressure
        rewrite = shrinking(pressure, history, facts, msgs) or rewrite_of(
            pressure, history, facts, msgs
        )
        start = rewrite.new_start if rewrite else common_head(history.facts, facts)
        return self._save(cid, request, inferred=False, rewrite=rewrite, start=start)

    def head(self, msgs: Sequence[Any]) -> list[MessageFacts]:
        """Facts of the anchor messages, cached by identity (the same task dict every call)."""
        head: list[MessageFacts] = []
        heads = self.heads
        for message in msgs[:ANCHOR_MESSAGES]:
            cached = heads.peek(id(message))
            if cached is not None and cached[0] is message:
                fact = cached[1]
            else:
                fact = describe(message)
                heads.put(id(message), (message, fact))
            head.append(fact)
            if fact.role == "user":
                break
        return head

    def inferred(
        self, system_key: int, messages: Sequence[Any], model: str | None, recent: Sequence[str]
    ) -> Placement:
        head = self.head(messages)
        candidates = self.store.candidates(anchor_of(system_key, head))
        extended = self._extended(candidates, messages)
        if extended is not None:
            return extended
        msgs = tuple(messages)
        facts = head + [describe(m) for m in msgs[len(head) :]]
        request = Request(system_key, msgs, facts, model)
        drawn_on = recent_histories(self.store, recent)
        asked = summarizer_of(self.asking, drawn_on, request)
        if asked is not None:
            return asked
        carried = carrying_output(self.outputs, self.store, request)
        if carried is not None:
            return self._continue(carried[0], request, carried[1])
        rewritten = best_rewrite(self.at_pressure, candidates, facts, msgs)
        if rewritten is not None:
            history, rewrite = rewritten
            return self._continue(history, request, rewrite)
        branched = branch(candidates, facts, len(head))
        if branched is not None:
            history, common = branched
            return self._save(history.conversation_id, request, inferred=True, start=common)
        found = self._by_summary(facts) or self.store.by_shared_tail(system_key, facts)
        if found is not None:
            shown = rewrite_of(self.at_pressure, found, facts, msgs)
            return self._continue(found, request, shown)
        whole = self._replaced(recent, request)
        if whole is not None:
            return self._continue(whole[0], request, whole[1])
        return self._save(self.new_id(), request, inferred=True, first=True)

    def _replaced(self, recent: Sequence[str], request: Request) -> tuple[History, Rewrite] | None:
        """The recent conversation of the caller's thread or task whose whole history the
        request replaces (step 5, ``_replacement``); when none does, the request's text
        as read is kept for the conversation it may open."""
        if self.at_pressure is None:
            return None
        pressed = functools.partial(was_at_pressure, self.at_pressure)
        found, signature = replaced(self.store, recent, request, pressed)
        if signature is not None:
            self.opening = (request.messages, signature)
        return found

    def _extended(self, candidates: Sequence[History], messages: Sequence[Any]) -> Placement | None:
        """The placement of a request that extends a candidate's last request, if one does.

        One candidate (the common case): it. Several (agents that started alike): the one
        whose last response the request sends back first, else the most recently used (the
        candidates come in that order): never a set or hash order. A request *equal* to an
        answered last request (nothing new, a response was given) is another agent opening
        the same way: a conversation of its own, which its next call tells apart by the
        response it sends back.
        """
        if len(candidates) > 1:
            candidates = by_response(candidates, messages)
        for history in candidates:
            added = grow(history, messages)
            if added is None:
                continue
            if not added and history.expected:
                again = Request(
                    history.system_key, tuple(messages), list(history.facts), history.model
                )
                return self._save(self.new_id(), again, inferred=True, first=True)
            return self._extend(history, added, inferred=True)
        return None

    def _continue(self, history: History, request: Request, rewrite: Rewrite | None) -> Placement:
        """The request continues ``history``'s conversation, with ``rewrite`` if any."""
        start = rewrite.new_start if rewrite else after_summary(request.facts)
        return self._save(
            history.conversation_id, request, inferred=True, rewrite=rewrite, start=start
        )

    def _by_summary(self, facts: Sequence[MessageFacts]) -> History | None:
        if not len(self.summaries):
            return None  # no summary remembered: no fact needs looking at
        for fact in facts:
            if fact.summary is not None:
                cid = self.summaries.peek(hash(fact.summary))
                history = self.store.get(cid) if cid is not None else None
                if history is not None:
                    return history
        return None

    def _extend(self, history: History, added: list[Any], *, inferred: bool) -> Placement:
        """The placement of a request that extends ``history`` by ``added`` (already taken
        into its copy of the messages by :func:`grow`)."""
        try:
            new = [describe(m) for m in added]
        except BaseException:
            # The copy must stay aligned with the facts: take the messages back out.
            del history.messages[len(history.facts) :]
            raise
        if len(self.outputs):
            self.outputs.pop(history.conversation_id)  # went on without the summary
        if asks_after(self.asking, history, new):
            del history.messages[len(history.facts) :]  # a summarizer's call: nothing kept
            chars = history.chars + sum(f.chars for f in new)
            return Placement(
                history.conversation_id, inferred, (), context_chars=chars, summarizer=True
            )
        replaced_response = response_replaced(self.at_pressure, history, new)
        if replaced_response is not None:
            request = Request(
                history.system_key, tuple(history.messages), [*history.facts, *new], history.model
            )
            del history.messages[len(history.facts) :]  # the copy as counted, then replaced
            return self._save(
                history.conversation_id, request, inferred=inferred,
                rewrite=replaced_response, start=replaced_response.new_start,
            )  # fmt: skip
        chars = self.store.extended(history, new)
        return Placement(history.conversation_id, inferred, tuple(new), context_chars=chars)

    def _save(
        self,
        cid: str,
        request: Request,
        *,
        inferred: bool,
        rewrite: Rewrite | None = None,
        start: int = 0,
        first: bool = False,
    ) -> Placement:
        history = self.store.save(cid, request)
        if rewrite is not None and rewrite.inserted and request.messages:
            history.opens_with_compaction = request.messages[0] is rewrite.inserted[0]
        opening, self.opening = self.opening, None
        if opening is not None and opening[0] is request.messages:
            self.store.keep_signature(history, opening[1])
        return Placement(
            cid,
            inferred,
            tuple(request.facts[start:]),
            rewrite=rewrite,
            context_chars=history.chars,
            first=first,
        )
