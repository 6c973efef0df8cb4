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
   (a compaction that replaced the task message too; looked up among the request's
   first and last ``_store.SHARED_TAIL_SCAN`` messages);
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
The parts: ``_placer`` (the steps in order), ``_placement`` (value objects,
comparisons), ``_store`` (the remembered histories and their bounds), ``_summarizing``
(step 0), ``_rewrites`` (steps 3 and 4), ``_replacement`` (step 5), ``_given`` (what the
host gives).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from otel_compaction.inference._given import (
    RECENT_PLACED,
    LastPlaced,
    Numbered,
    RecentPlaces,
    no_clock,
    placed_last,
)
from otel_compaction.inference._placement import Asking, Placement, anchor_of, extends
from otel_compaction.inference._placer import MAX_HEAD_CHARS, MAX_HEADS, Placer
from otel_compaction.inference._replacement import (
    WHOLE_HISTORY_CARRY,
    WHOLE_HISTORY_CARRY_ALONE,
    WHOLE_HISTORY_REST,
    WHOLE_HISTORY_TASK,
)
from otel_compaction.inference._rewrites import AtPressure
from otel_compaction.inference._store import TAIL_KEYS, HistoryStore
from otel_compaction.inference._summarizing import forced_summarizer
from otel_compaction.inference.messages import describe, value_digest
from otel_compaction.inference.rewrite import Rewrite
from otel_compaction.inference.summarizer import output_needle

__all__ = [
    "MAX_CHARS",
    "MAX_HEADS",
    "MAX_HEAD_CHARS",
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
            ``ContextVar`` shared by the threads of a process; default: :class:`LastPlaced`).
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
        self._lock: AbstractContextManager[Any] = lock if lock is not None else nullcontext()
        self._recent: RecentPlaces = recent if recent is not None else LastPlaced()
        self._new_id: Callable[[], str] = new_id if new_id is not None else Numbered()
        self._store = HistoryStore(max_histories, max_messages, max_chars, idle_seconds)
        self._placer = Placer(self._store, at_pressure, self._new_id)

    @property
    def at_pressure(self) -> AtPressure:
        """Whether a conversation was at pressure (None: no whole-history replacement)."""
        return self._placer.at_pressure

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
        system_key = value_digest(system)[0] if system else 0
        recent = self._recent.get()
        with self._lock:
            self._store.expire(self.clock())
            placer = self._placer
            placer.asking = Asking(system, tools)
            try:
                if summarizer:
                    placement = forced_summarizer(
                        self._store, recent, given_id, messages, self._new_id
                    )
                elif given_id is not None:
                    placement = placer.given(given_id, system_key, messages, model)
                else:
                    placement = placer.inferred(system_key, messages, model, recent)
            finally:
                placer.asking = None
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
        system_key = value_digest(system)[0] if system else 0
        with self._lock:
            anchor = anchor_of(system_key, self._placer.head(msgs))
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
                history.described_response = None

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
            self._placer.summaries.put(hash(text), conversation_id)

    def remember_summarizer_output(self, conversation_id: str, text: str) -> None:
        """A summarizer's answer for the conversation: the request that carries it next is
        the conversation's compaction (``inference.summarizer``)."""
        needle = output_needle(text)
        if needle is None:
            return
        with self._lock:
            self._placer.outputs.put(conversation_id, needle)
