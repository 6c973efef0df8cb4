"""Which conversation a request belongs to, and what is new in it since the last call.

Per process, the tracker keeps the last request history of each recent
conversation (a shallow copy of the message list and one :class:`MessageFacts`
per message). A request is placed by, in order:

0. a summarizer's call (``inference.summarizer``) is placed in the conversation it
   draws on and remembered nowhere (not a turn); a request carrying its answer is
   that conversation's compaction;
1. the id the application gave, when there is one;
2. its *anchor* (system prompt + messages up to the first user message): the
   most recent conversation with that anchor whose last history the request
   extends (a C-speed prefix comparison, then facts only for the new messages);
3. the same candidates, when the history was rewritten in a compaction shape
   (see ``rewrite``): the conversation continues and the rewrite is reported;
   or when it branches off a point past the anchor (a retry): it continues;
4. a summary it carries that an earlier compaction of a conversation produced,
   or a verbatim tail shared with a conversation of the same system prompt
   (a compaction that replaced the task message too);
5. a *whole-history replacement*: the request is nothing but user or system text
   never seen (one summary, task included, nothing verbatim) and a conversation
   recently placed in the same thread or asyncio task had the same system prompt
   and model, and its text is carried into the new one: at least
   :data:`WHOLE_HISTORY_CARRY` of the new text's word 5-grams found in it when that
   conversation was at pressure (its last measured context plus its last response,
   against the pressure threshold); when it was not, :data:`WHOLE_HISTORY_CARRY_ALONE`
   and the new text shorter than what it replaces; the best carried of several
   wins, the most recent on ties (measured by ``carry``, which reads each history
   once and at most ``carry.CARRY_READ_CHARS`` characters per call);
6. otherwise a new conversation (so two agents starting separate tasks with the
   same system prompt stay two: a fresh task carries nothing of the other's
   history).

Two agents interleaving calls with different tasks have different anchors, so
they never mix. Cost per call grows with the new messages, not the history,
except on a rewrite or a conversation's first call, and never with the text of
other conversations. Everything is bounded (LRU, idle expiry).

The tracker reads nothing ambient: the clock, the lock, the conversations last placed
in the caller's thread or task and the minting of new ids are given to it. Without
them it is a single-threaded, deterministic tracker (no idle expiry, ids ``conv-1``,
``conv-2``...); the instrumentation gives it the process's (``instrument._ambient``).
The parts: ``_placement`` (value objects, comparisons), ``_store`` (the remembered
histories and their bounds), ``_summarizing`` (step 0), ``_replacement`` (step 5).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from otel_compaction._bounded import BoundedMap
from otel_compaction.inference import carry
from otel_compaction.inference._given import (
    RECENT_PLACED,
    LastPlaced,
    Numbered,
    RecentPlaces,
    no_clock,
    placed_last,
)
from otel_compaction.inference._placement import (
    ANCHOR_MESSAGES,
    Asking,
    History,
    Placement,
    after_summary,
    anchor_of,
    branch,
    by_response,
    extends,
    grow,
)
from otel_compaction.inference._replacement import (
    WHOLE_HISTORY_CARRY,
    WHOLE_HISTORY_CARRY_ALONE,
    WHOLE_HISTORY_REST,
    WHOLE_HISTORY_TASK,
    replaced,
)
from otel_compaction.inference._rewrites import (
    best_rewrite,
    response_replaced,
    rewrite_of,
    shrinking,
    was_at_pressure,
)
from otel_compaction.inference._store import TAIL_KEYS, HistoryStore
from otel_compaction.inference._summarizing import (
    asks_after,
    carrying_output,
    forced_summarizer,
    recent_histories,
    summarizer_of,
)
from otel_compaction.inference.messages import MessageFacts, describe, fingerprint
from otel_compaction.inference.rewrite import Rewrite, common_head
from otel_compaction.inference.summarizer import output_needle

__all__ = [
    "MAX_CHARS",
    "MAX_HISTORIES",
    "MAX_MESSAGES",
    "RECENT_PLACED",
    "TAIL_KEYS",
    "WHOLE_HISTORY_CARRY",
    "WHOLE_HISTORY_CARRY_ALONE",
    "WHOLE_HISTORY_REST",
    "WHOLE_HISTORY_TASK",
    "HistoryTracker",
    "LastPlaced",
    "Numbered",
    "Placement",
    "RecentPlaces",
]

MAX_HISTORIES = 1024
"""Conversations whose last history is kept for inference."""
MAX_MESSAGES = 50_000
"""Messages kept over all those histories: the tracker holds references to the agent's
message objects, so a process that ran many long conversations must not keep them all alive
until they expire (the least recently used histories go first, never the current one)."""
MAX_CHARS = 16_000_000
"""Characters of text over all remembered histories: the messages held are the caller's
own objects, so a process that starts conversations with huge messages and drops them must
not keep gigabytes alive (``Settings.history_max_chars``; the current history is never
dropped, whatever its size)."""
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
    return entry[1].chars


class HistoryTracker:
    """Conversation and rewrite inference over request histories.

    Args:
        idle_seconds: histories unused this long are forgotten.
        max_histories: bound on remembered histories (LRU).
        max_messages: bound on the messages of all remembered histories (LRU).
        max_chars: bound on the characters of all remembered histories (LRU).
        clock: monotonic seconds (default: none, nothing expires by idleness).
        at_pressure: whether a conversation's last measured context plus ``tokens``
            more is at pressure (evidence of a whole-history replacement); None: no
            whole-history replacement is recognised.
        lock: held around each operation (default: none, for one thread).
        recent: the conversations last placed in the caller's thread or task (a
            ``ContextVar`` shared by the threads of a process; default: one list).
        new_id: mints the id of a new conversation (default: :class:`Numbered`).
    """

    def __init__(
        self,
        idle_seconds: float = 3600.0,
        max_histories: int = MAX_HISTORIES,
        max_messages: int = MAX_MESSAGES,
        max_chars: int = MAX_CHARS,
        clock: Callable[[], float] = no_clock,
        at_pressure: Callable[[str, int], bool] | None = None,
        *,
        lock: AbstractContextManager[Any] | None = None,
        recent: RecentPlaces | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.clock = clock
        self.at_pressure = at_pressure
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self._recent: RecentPlaces = recent if recent is not None else LastPlaced()
        self._new_id: Callable[[], str] = new_id if new_id is not None else Numbered()
        self._store = HistoryStore(max_histories, max_messages, max_chars, idle_seconds)
        self._summaries: BoundedMap[int, str] = BoundedMap(MAX_SUMMARIES)
        self._heads: BoundedMap[int, tuple[Any, MessageFacts]] = BoundedMap(
            MAX_HEADS, max_bytes=MAX_HEAD_CHARS, size=_head_size
        )
        self._outputs: BoundedMap[str, str] = BoundedMap(MAX_OUTPUTS)
        """Per conversation, the opening of a summarizer's answer no request has carried yet."""
        self._asking: Asking | None = None
        """The request being placed (set under the lock, for the summarizer checks)."""
        self._opening: tuple[tuple[Any, ...], carry.Signature] | None = None
        """A request that matched no recent conversation, with the signature of its text
        read for the match: kept by ``_store`` if the request opens a conversation (read
        once)."""

    def __len__(self) -> int:
        return len(self._store)

    def place(
        self,
        given_id: str | None,
        system: Any,
        messages: Sequence[Any],
        model: str | None = None,
        *,
        tools: bool | None = None,
        summarizer: bool = False,
    ) -> Placement:
        """Place one request and remember its history as its conversation's last.

        ``tools``: whether the request offers tools. ``summarizer``: the request is known
        to be a summarizer's call (made inside a framework's summarization hook): it is
        placed in the conversation it draws on and remembered nowhere. A request found
        to be one by its own evidence (``inference.summarizer``) is treated alike.
        """
        system_key = fingerprint(system)[0] if system else 0
        recent = self._recent.get()
        with self._lock:
            self._store.expire(self.clock())
            self._asking = Asking(system, tools)
            try:
                if summarizer:
                    placement = forced_summarizer(
                        self._store, recent, given_id, messages, self._new_id
                    )
                elif given_id is not None:
                    placement = self._place_given(given_id, system_key, messages, model)
                else:
                    placement = self._place_inferred(system_key, messages, model, recent)
            finally:
                self._asking = None
        now = placed_last(recent, placement.conversation_id)
        if now is not None:
            self._recent.set(now)
        return placement

    def find(self, system: Any, messages: Sequence[Any]) -> str | None:
        """The conversation a request (e.g. a summarizer's) continues, without recording it.

        By anchor and prefix first; then, whatever its system prompt, by the last
        messages of a conversation's history appearing in it.
        """
        msgs = tuple(messages)
        system_key = fingerprint(system)[0] if system else 0
        with self._lock:
            anchor = anchor_of(system_key, self._head(msgs))
            for history in self._store.candidates(anchor):
                if extends(history, msgs):
                    return history.conversation_id
            for message in reversed(msgs[-(TAIL_KEYS + 2) :]):
                found = self._store.by_tail(describe(message).key)
                if found is not None:
                    return found
        return None

    def remember_response(self, conversation_id: str, messages: Sequence[Any]) -> None:
        """The response, as the agent will likely send it back, for rewrite matching."""
        with self._lock:
            history = self._store.get(conversation_id)
            if history is not None:
                history.expected = tuple(messages)

    def reread(self, conversation_id: str) -> tuple[Rewrite, int] | None:
        """Read the conversation's last request again, message by message: when the caller
        shortened some of its messages in place since they were described (a tool result
        cleared by mutating its dict), the prune that shows and the request's characters
        now; None when nothing got shorter. Costs a walk of the whole history, so the
        caller asks only when the measured context says it shrank."""
        with self._lock:
            return self._store.reread(conversation_id)

    def remember_summary(self, conversation_id: str, text: str) -> None:
        """A compaction summary of the conversation: a request carrying it continues it."""
        with self._lock:
            self._summaries.put(hash(text), conversation_id)

    def remember_summarizer_output(self, conversation_id: str, text: str) -> None:
        """A summarizer's answer for the conversation: the request that carries it next is
        the conversation's compaction (``inference.summarizer``)."""
        needle = output_needle(text)
        if needle is None:
            return
        with self._lock:
            self._outputs.put(conversation_id, needle)

    # ------------------------------------------------------------ placement

    def _place_given(
        self, cid: str, system_key: int, messages: Sequence[Any], model: str | None
    ) -> Placement:
        history = self._store.get(cid)
        if history is not None:
            added = grow(history, messages)
            if added is not None:
                return self._extend(history, added, inferred=False)
        msgs = tuple(messages)
        facts = [describe(m) for m in msgs]
        if history is None:
            return self._save(cid, system_key, msgs, facts, model, inferred=False, first=True)
        request = (system_key, facts, msgs)
        asked = summarizer_of(self._asking, [history], request, inferred=False)
        if asked is not None:
            return asked
        carried = carrying_output(self._outputs, self._store, (facts, msgs), only=cid)
        if carried is not None:
            start = carried[1].new_start if carried[1] else common_head(history.facts, facts)
            return self._save(
                cid, system_key, msgs, facts, model, inferred=False, rewrite=carried[1],
                start=start,
            )  # fmt: skip
        pressure = self.at_pressure
        rewrite = shrinking(pressure, history, facts, msgs) or rewrite_of(
            pressure, history, facts, msgs
        )
        start = rewrite.new_start if rewrite else common_head(history.facts, facts)
        return self._save(
            cid, system_key, msgs, facts, model, inferred=False, rewrite=rewrite, start=start
        )

    def _head(self, msgs: Sequence[Any]) -> list[MessageFacts]:
        """Facts of the anchor messages, cached by identity (the same task dict every call)."""
        head: list[MessageFacts] = []
        heads = self._heads
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

    def _place_inferred(
        self, system_key: int, messages: Sequence[Any], model: str | None, recent: Sequence[str]
    ) -> Placement:
        head = self._head(messages)
        candidates = self._store.candidates(anchor_of(system_key, head))
        extended = self._extended(candidates, messages)
        if extended is not None:
            return extended
        msgs = tuple(messages)
        facts = head + [describe(m) for m in msgs[len(head) :]]
        drawn_on = recent_histories(self._store, recent)
        asked = summarizer_of(self._asking, drawn_on, (system_key, facts, msgs))
        if asked is not None:
            return asked
        carried = carrying_output(self._outputs, self._store, (facts, msgs))
        if carried is not None:
            return self._continue(carried[0], system_key, msgs, facts, model, carried[1])
        rewritten = best_rewrite(self.at_pressure, candidates, facts, msgs)
        if rewritten is not None:
            history, rewrite = rewritten
            return self._continue(history, system_key, msgs, facts, model, rewrite)
        branched = branch(candidates, facts, len(head))
        if branched is not None:
            history, common = branched
            return self._save(
                history.conversation_id, system_key, msgs, facts, model,
                inferred=True, start=common,
            )  # fmt: skip
        found = self._by_summary(facts) or self._store.by_shared_tail(system_key, facts)
        if found is not None:
            shown = rewrite_of(self.at_pressure, found, facts, msgs)
            return self._continue(found, system_key, msgs, facts, model, shown)
        whole = self._replaced(recent, (system_key, model, facts, msgs))
        if whole is not None:
            return self._continue(whole[0], system_key, msgs, facts, model, whole[1])
        cid = self._new_id()
        return self._save(cid, system_key, msgs, facts, model, inferred=True, first=True)

    def _replaced(
        self,
        recent: Sequence[str],
        request: tuple[int, str | None, list[MessageFacts], tuple[Any, ...]],
    ) -> tuple[History, Rewrite] | None:
        """The recent conversation of the caller's thread or task whose whole history the
        request replaces (step 5, ``_replacement``); when none does, the request's text
        as read is kept for the conversation it may open."""
        if self.at_pressure is None:
            return None
        pressed = functools.partial(was_at_pressure, self.at_pressure)
        found, signature = replaced(self._store, recent, request, pressed)
        if signature is not None:
            self._opening = (request[3], signature)
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
                msgs = tuple(messages)
                return self._save(
                    self._new_id(), history.system_key, msgs, list(history.facts),
                    history.model, inferred=True, first=True,
                )  # fmt: skip
            return self._extend(history, added, inferred=True)
        return None

    def _continue(
        self,
        history: History,
        system_key: int,
        msgs: tuple[Any, ...],
        facts: list[MessageFacts],
        model: str | None,
        rewrite: Rewrite | None,
    ) -> Placement:
        start = rewrite.new_start if rewrite else after_summary(facts)
        return self._save(
            history.conversation_id, system_key, msgs, facts, model,
            inferred=True, rewrite=rewrite, start=start,
        )  # fmt: skip

    def _by_summary(self, facts: Sequence[MessageFacts]) -> History | None:
        for fact in facts:
            if fact.summary is not None:
                cid = self._summaries.peek(hash(fact.summary))
                history = self._store.get(cid) if cid is not None else None
                if history is not None:
                    return history
        return None

    # ------------------------------------------------------------ storage

    def _extend(self, history: History, added: list[Any], *, inferred: bool) -> Placement:
        """The placement of a request that extends ``history`` by ``added`` (already taken
        into its copy of the messages by :func:`grow`)."""
        try:
            new = [describe(m) for m in added]
        except BaseException:
            # The copy must stay aligned with the facts: take the messages back out.
            del history.messages[len(history.facts) :]
            raise
        if len(self._outputs):
            self._outputs.pop(history.conversation_id)  # went on without the summary
        if asks_after(self._asking, history, new):
            del history.messages[len(history.facts) :]  # a summarizer's call: nothing kept
            chars = history.chars + sum(f.chars for f in new)
            return Placement(
                history.conversation_id, inferred, (), context_chars=chars, summarizer=True
            )
        replaced_response = response_replaced(self.at_pressure, history, new)
        if replaced_response is not None:
            msgs = tuple(history.messages)
            del history.messages[len(history.facts) :]  # the copy as counted, then replaced
            return self._save(
                history.conversation_id, history.system_key, msgs,
                [*history.facts, *new], history.model,
                inferred=inferred, rewrite=replaced_response, start=replaced_response.new_start,
            )  # fmt: skip
        chars = self._store.extended(history, new)
        return Placement(history.conversation_id, inferred, tuple(new), context_chars=chars)

    def _save(
        self,
        cid: str,
        system_key: int,
        msgs: tuple[Any, ...],
        facts: list[MessageFacts],
        model: str | None,
        *,
        inferred: bool,
        rewrite: Rewrite | None = None,
        start: int = 0,
        first: bool = False,
    ) -> Placement:
        history = self._store.save(cid, system_key, msgs, facts, model)
        opening, self._opening = self._opening, None
        if opening is not None and opening[0] is msgs:
            self._store.keep_signature(history, opening[1])
        return Placement(
            cid,
            inferred,
            tuple(facts[start:]),
            rewrite=rewrite,
            context_chars=history.chars,
            first=first,
        )
