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
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.inference import carry
from otel_compaction.inference.messages import MessageFacts, describe, lead, text_of, value_digest
from otel_compaction.inference.rewrite import (
    MIN_DROPPED_TURNS,
    MIN_DROPPED_TURNS_AT_PRESSURE,
    Rewrite,
    common_head,
    edited_in_place,
    infer_rewrite,
    replaced_whole,
    summarized,
)
from otel_compaction.inference.summarizer import (
    SNIPPET_MESSAGES,
    SUMMARY_FALL,
    SYSTEM_ROLES,
    TRANSCRIPT_CHARS,
    asks_to_summarize,
    carries_text,
    carrying,
    last_text,
    marked_summary,
    output_needle,
    system_keys,
    system_text,
)
from otel_compaction.signals.tokens import tokens_for_chars

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
MAX_PER_ANCHOR = 8
TAIL_KEYS = 8
MAX_SUMMARIES = 4096
ANCHOR_MESSAGES = 4
MAX_OUTPUTS = 64
"""Summarizer answers waiting for the request that carries them (one per conversation)."""
MAX_HEADS = 1024
"""Anchor messages whose facts are cached by identity (strong references, bounded)."""
RECENT_PLACED = 8
"""Conversations remembered per thread or asyncio task as candidates of a whole-history
replacement (the most recently placed last)."""
RECENT_SUMMARIZED = 8
"""The process's most recently used conversations a summarizer's call is matched against
besides those of its own thread or task (``inference.summarizer``)."""
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

_ids = itertools.count(1)
_PREFIX = f"conv-{os.getpid():x}-{int(time.time()) & 0xFFFFFF:06x}-"


def new_conversation_id() -> str:
    """A process-unique id for an inferred conversation."""
    return f"{_PREFIX}{next(_ids)}"


@dataclass(slots=True)
class _History:
    conversation_id: str
    anchor: int
    system_key: int
    messages: list[Any]
    """The last request's messages (a copy, extended in place by the next call's new ones)."""
    facts: list[MessageFacts]
    last_used: float
    chars: int = 0
    expected: tuple[Any, ...] = ()
    tail_keys: tuple[int, ...] = ()
    tail_marks: tuple[tuple[int, int], ...] = ()
    """The characters (as described) and :func:`lead` of the messages of ``tail_keys``: a
    message changed in place between its description and its key could be passed over."""
    model: str | None = None
    carry: carry.Signature | None = None
    """What the whole-history replacement rule has read of it (``inference.carry``)."""


@dataclass(slots=True)
class Placement:
    """Where a request belongs and what it brings (not to be changed once built; not
    frozen, since one is built on every LLM call and a frozen one costs twice as much).

    Args:
        conversation_id: the conversation (given or inferred).
        inferred: the tracker chose the id (no id was given).
        new_facts: facts of the messages new since the conversation's last call.
        rewrite: the compaction this request's history shows, if any.
        context_chars: characters of the whole request history.
        first: the conversation's first call seen.
        summarizer: the request is a summarizer's call drawing on ``conversation_id``
            (``inference.summarizer``): the compaction's cost, not a turn; nothing of it
            was remembered.
    """

    conversation_id: str
    inferred: bool
    new_facts: tuple[MessageFacts, ...]
    rewrite: Rewrite | None = None
    context_chars: int = 0
    first: bool = False
    summarizer: bool = False


@dataclass(frozen=True, slots=True)
class _Asking:
    """What the placement of one request reads besides its messages."""

    system: Any
    tools: bool | None
    """Whether the request offers tools (None: unknown)."""


def _anchor(system_key: int, facts: Sequence[MessageFacts]) -> int:
    keys = []
    for fact in facts[:ANCHOR_MESSAGES]:
        keys.append(fact.key)
        if fact.role == "user":
            break
    return hash((system_key, tuple(keys)))


def _extends(history: _History, messages: Sequence[Any]) -> bool:
    count = len(history.messages)
    if len(messages) < count:
        return False
    try:
        return list(messages[:count]) == history.messages
    except Exception:  # noqa: BLE001 - a foreign __eq__ may raise: then it is no prefix
        return False


def _grow(history: _History, messages: Sequence[Any]) -> list[Any] | None:
    """The messages ``messages`` adds to the history's last request, if it extends it
    (the history's copy is then extended to equal it); None, the copy unchanged, if not."""
    if not _extends(history, messages):
        return None
    added = list(messages[len(history.messages) :])
    history.messages.extend(added)
    return added


@dataclass
class HistoryTracker:
    """Conversation and rewrite inference over request histories (thread-safe).

    Args:
        idle_seconds: histories unused this long are forgotten.
        max_histories: bound on remembered histories (LRU).
        max_messages: bound on the messages of all remembered histories (LRU).
        max_chars: bound on the characters of all remembered histories (LRU).
        clock: monotonic seconds.
        at_pressure: whether a conversation's last measured context plus ``tokens``
            more is at pressure (evidence of a whole-history replacement); None: no
            whole-history replacement is recognised.
    """

    idle_seconds: float = 3600.0
    max_histories: int = MAX_HISTORIES
    max_messages: int = MAX_MESSAGES
    max_chars: int = MAX_CHARS
    clock: Callable[[], float] = time.monotonic
    at_pressure: Callable[[str, int], bool] | None = None
    _recent: ContextVar[tuple[str, ...]] = field(
        default_factory=lambda: ContextVar("otel_compaction_recent", default=()), init=False
    )
    """The conversations last placed in this thread or task (a context variable: each
    thread and each asyncio task sees its own, a task starting with its parent's)."""
    _by_id: OrderedDict[str, _History] = field(default_factory=OrderedDict, init=False)
    _by_anchor: dict[int, list[str]] = field(default_factory=dict, init=False)
    _by_tail: dict[int, str] = field(default_factory=dict, init=False)
    _tail_marks: dict[tuple[int, int], int] = field(default_factory=dict, init=False)
    """How many indexed tail messages have each size and lead (``_History.tail_marks``): a
    message of another size or lead cannot share a tail, so a new conversation's first
    call digests none of its messages but those marked so (it reads its history
    once, not twice)."""
    _stale: dict[str, None] = field(default_factory=dict, init=False)
    """Histories whose entries in ``_by_tail`` are behind their facts: brought up to date
    only before the tail index is read (rarely), so a continuing call computes no keys."""
    _summaries: OrderedDict[int, str] = field(default_factory=OrderedDict, init=False)
    _heads: OrderedDict[int, tuple[Any, MessageFacts]] = field(
        default_factory=OrderedDict, init=False
    )
    _outputs: OrderedDict[str, str] = field(default_factory=OrderedDict, init=False)
    """Per conversation, the opening of a summarizer's answer no request has carried yet."""
    _asking: _Asking | None = field(default=None, init=False)
    """The request being placed (set under the lock, for the summarizer checks)."""
    _signed: OrderedDict[str, None] = field(default_factory=OrderedDict, init=False)
    """Conversations whose history holds a carry-over signature (``carry.MAX_SIGNATURES``)."""
    _opening: tuple[tuple[Any, ...], carry.Signature] | None = field(default=None, init=False)
    """A request that matched no recent conversation, with the signature of its text read
    for the match: kept by ``_store`` if the request opens a conversation (read once)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _retained: int = field(default=0, init=False)
    """Messages held by all histories (``max_messages`` bounds it)."""
    _retained_chars: int = field(default=0, init=False)
    """Characters of the messages held by all histories (``max_chars`` bounds it)."""
    _now: float = field(default=0.0, init=False)
    """The clock at the start of the current placement (read once per call, by ``_expire``)."""
    _oldest_used: float = field(default=-math.inf, init=False)
    """A lower bound of the oldest history's ``last_used`` (histories are kept in the
    order of use, so it only grows): ``_expire`` has nothing to do while it is recent."""

    def __len__(self) -> int:
        return len(self._by_id)

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
        with self._lock:
            self._expire()
            self._asking = _Asking(system, tools)
            try:
                if summarizer:
                    placement = self._forced_summarizer(given_id, system_key, messages)
                elif given_id is not None:
                    placement = self._place_given(given_id, system_key, messages, model)
                else:
                    placement = self._place_inferred(system_key, messages, model)
            finally:
                self._asking = None
        recent = self._recent.get()
        cid = placement.conversation_id
        if not recent or recent[-1] != cid:
            kept = [c for c in recent if c != cid][-(RECENT_PLACED - 1) :]
            self._recent.set((*kept, cid))
        return placement

    def find(self, system: Any, messages: Sequence[Any]) -> str | None:
        """The conversation a request (e.g. a summarizer's) continues, without recording it.

        By anchor and prefix first; then, whatever its system prompt, by the last
        messages of a conversation's history appearing in it.
        """
        msgs = tuple(messages)
        system_key = value_digest(system)[0] if system else 0
        with self._lock:
            anchor = _anchor(system_key, self._head(msgs))
            for cid in reversed(self._by_anchor.get(anchor, ())):
                if _extends(self._by_id[cid], msgs):
                    return cid
            self._refresh_tails()
            for message in reversed(msgs[-(TAIL_KEYS + 2) :]):
                found = self._by_tail.get(describe(message).key)
                if found is not None and found in self._by_id:
                    return found
        return None

    def remember_response(self, conversation_id: str, messages: Sequence[Any]) -> None:
        """The response, as the agent will likely send it back, for rewrite matching."""
        with self._lock:
            history = self._by_id.get(conversation_id)
            if history is not None:
                history.expected = tuple(messages)

    def reread(self, conversation_id: str) -> tuple[Rewrite, int] | None:
        """Read the conversation's last request again, message by message: when the caller
        shortened some of its messages in place since they were described (a tool result
        cleared by mutating its dict), the prune that shows and the request's characters
        now; None when nothing got shorter. Costs a walk of the whole history, so the
        caller asks only when the measured context says it shrank."""
        with self._lock:
            history = self._by_id.get(conversation_id)
            if history is None:
                return None
            now = [describe(m) for m in history.messages]
            rewrite = edited_in_place(history.facts, now)
            if rewrite is None:
                return None
            chars = sum(f.chars for f in now)
            self._retained_chars += chars - history.chars
            history.facts, history.chars = now, chars
            history.carry = None  # its text changed: read again when needed
            self._stale[conversation_id] = None
            return rewrite, chars

    def remember_summary(self, conversation_id: str, text: str) -> None:
        """A compaction summary of the conversation: a request carrying it continues it."""
        with self._lock:
            self._summaries[hash(text)] = conversation_id
            self._summaries.move_to_end(hash(text))
            while len(self._summaries) > MAX_SUMMARIES:
                self._summaries.popitem(last=False)

    # ------------------------------------------------------------ placement

    def _place_given(
        self, cid: str, system_key: int, messages: Sequence[Any], model: str | None
    ) -> Placement:
        history = self._by_id.get(cid)
        if history is not None:
            added = _grow(history, messages)
            if added is not None:
                return self._extend(history, added, inferred=False)
        msgs = tuple(messages)
        facts = [describe(m) for m in msgs]
        if history is None:
            return self._store(cid, system_key, msgs, facts, model, inferred=False, first=True)
        asked = self._summarizer_of([history], system_key, facts, msgs, inferred=False)
        if asked is not None:
            return asked
        carried = self._carrying_output(facts, msgs, only=cid)
        if carried is not None:
            start = carried[1].new_start if carried[1] else common_head(history.facts, facts)
            return self._store(
                cid, system_key, msgs, facts, model, inferred=False, rewrite=carried[1],
                start=start,
            )  # fmt: skip
        rewrite = self._shrinking(history, facts, msgs) or self._rewrite(history, facts, msgs)
        start = rewrite.new_start if rewrite else common_head(history.facts, facts)
        return self._store(
            cid, system_key, msgs, facts, model, inferred=False, rewrite=rewrite, start=start
        )

    def _head(self, msgs: Sequence[Any]) -> list[MessageFacts]:
        """Facts of the anchor messages, cached by identity (the same task dict every call)."""
        head: list[MessageFacts] = []
        for message in msgs[:ANCHOR_MESSAGES]:
            cached = self._heads.get(id(message))
            if cached is not None and cached[0] is message:
                fact = cached[1]
            else:
                fact = describe(message)
                self._heads[id(message)] = (message, fact)
                while len(self._heads) > MAX_HEADS:
                    self._heads.popitem(last=False)
            head.append(fact)
            if fact.role == "user":
                break
        return head

    def _place_inferred(
        self, system_key: int, messages: Sequence[Any], model: str | None
    ) -> Placement:
        head = self._head(messages)
        anchor = _anchor(system_key, head)
        candidates = [self._by_id[c] for c in reversed(self._by_anchor.get(anchor, ()))]
        extended = self._extended(candidates, messages)
        if extended is not None:
            return extended
        msgs = tuple(messages)
        facts = head + [describe(m) for m in msgs[len(head) :]]
        asked = self._summarizer_of(self._recent_histories(), system_key, facts, msgs)
        if asked is not None:
            return asked
        carried = self._carrying_output(facts, msgs)
        if carried is not None:
            return self._continue(carried[0], system_key, msgs, facts, model, carried[1])
        rewritten = self._best_rewrite(candidates, facts, msgs)
        if rewritten is not None:
            history, rewrite = rewritten
            return self._continue(history, system_key, msgs, facts, model, rewrite)
        branched = self._branch(candidates, facts, len(head))
        if branched is not None:
            history, common = branched
            return self._store(
                history.conversation_id, system_key, msgs, facts, model,
                inferred=True, start=common,
            )  # fmt: skip
        found = self._by_summary(facts) or self._by_shared_tail(system_key, facts)
        if found is not None:
            shown = self._rewrite(found, facts, msgs)
            return self._continue(found, system_key, msgs, facts, model, shown)
        replaced = self._replaced(system_key, model, facts, msgs)
        if replaced is not None:
            return self._continue(replaced[0], system_key, msgs, facts, model, replaced[1])
        cid = new_conversation_id()
        return self._store(cid, system_key, msgs, facts, model, inferred=True, first=True)

    def _replaced(
        self,
        system_key: int,
        model: str | None,
        facts: list[MessageFacts],
        msgs: tuple[Any, ...],
    ) -> tuple[_History, Rewrite] | None:
        """The recent conversation of this thread or task whose whole history the request
        replaces, by the rule of the module docstring (step 5), if one qualifies."""
        if self.at_pressure is None or not carry.may_replace(facts):
            return None
        best: tuple[float, _History, Rewrite] | None = None
        reading: carry.Reading | None = None
        text: list[str] | None = None
        opening = 0
        for cid in reversed(self._recent.get()):
            history = self._by_id.get(cid)
            if history is None or history.system_key != system_key or history.model != model:
                continue
            rewrite = self._replacement(history, facts, msgs)
            if rewrite is None:
                continue
            pressed = self._was_at_pressure(history)
            if not pressed and not _falls(rewrite):
                continue  # far from pressure, a replacement that reclaims little is none
            if reading is None:
                reading = carry.Reading(rewrite.inserted)
                opening = len(msgs) - len(rewrite.inserted)
            if text is None:
                text = ["\n".join(text_of(m) for m in rewrite.inserted)]
            if marked_summary(text[0]) and _falls(rewrite):
                carried = 1.0  # says it is a summary, and is much shorter: no carry needed
            elif not pressed and _restates_task_only(rewrite):
                continue  # far from pressure, another agent's task (the same statement)
            else:
                carried = self._carried(reading, history, len(rewrite.dropped))
            needed = WHOLE_HISTORY_CARRY if pressed else WHOLE_HISTORY_CARRY_ALONE
            if carried >= needed and (best is None or carried > best[0]):
                best = (carried, history, rewrite)
        if best is not None:
            return best[1], best[2]
        signature = reading.as_task(opening) if reading is not None else None
        if signature is not None:
            self._opening = (msgs, signature)
        return None

    def _carried(self, reading: carry.Reading, history: _History, dropped: int) -> float:
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
            self._keep_signature(history, signature)
        self._signed.move_to_end(history.conversation_id)
        reading.respond(signature, history.expected)
        return reading.carried(signature, WHOLE_HISTORY_REST, WHOLE_HISTORY_TASK)

    def _keep_signature(self, history: _History, signature: carry.Signature) -> None:
        """Give ``history`` its carry-over signature, the least recently signed histories
        beyond ``carry.MAX_SIGNATURES`` losing theirs."""
        history.carry = signature
        self._signed[history.conversation_id] = None
        self._signed.move_to_end(history.conversation_id)
        while len(self._signed) > carry.MAX_SIGNATURES:
            forgotten = self._by_id.get(self._signed.popitem(last=False)[0])
            if forgotten is not None:
                forgotten.carry = None

    def _extended(
        self, candidates: Sequence[_History], messages: Sequence[Any]
    ) -> Placement | None:
        """The placement of a request that extends a candidate's last request, if one does.

        One candidate (the common case): it. Several (agents that started alike): the one
        whose last response the request sends back first, else the most recently used (the
        candidates come in that order): never a set or hash order. A request *equal* to an
        answered last request (nothing new, a response was given) is another agent opening
        the same way: a conversation of its own, which its next call tells apart by the
        response it sends back.
        """
        if len(candidates) > 1:
            candidates = _by_response(candidates, messages)
        for history in candidates:
            added = _grow(history, messages)
            if added is None:
                continue
            if not added and history.expected:
                msgs = tuple(messages)
                return self._store(
                    new_conversation_id(), history.system_key, msgs, list(history.facts),
                    history.model, inferred=True, first=True,
                )  # fmt: skip
            return self._extend(history, added, inferred=True)
        return None

    def _continue(
        self,
        history: _History,
        system_key: int,
        msgs: tuple[Any, ...],
        facts: list[MessageFacts],
        model: str | None,
        rewrite: Rewrite | None,
    ) -> Placement:
        start = rewrite.new_start if rewrite else _after_summary(facts)
        return self._store(
            history.conversation_id,
            system_key,
            msgs,
            facts,
            model,
            inferred=True,
            rewrite=rewrite,
            start=start,
        )

    def _best_rewrite(
        self, candidates: Sequence[_History], facts: list[MessageFacts], msgs: tuple[Any, ...]
    ) -> tuple[_History, Rewrite] | None:
        """The candidate whose history the request rewrites keeping the most of it verbatim
        (messages kept, then their characters, tool results included), the most recently
        used on ties: two agents with the same replies but their own tool outputs each
        keep only their own tail whole."""
        best: tuple[tuple[int, int], _History, Rewrite] | None = None
        for history in candidates:
            rewrite = self._rewrite(history, facts, msgs)
            if rewrite is None:
                continue
            score = (len(rewrite.retained), rewrite.retained_chars)
            if best is None or score > best[0]:
                best = (score, history, rewrite)
        return None if best is None else (best[1], best[2])

    def _rewrite(
        self, history: _History, facts: list[MessageFacts], msgs: tuple[Any, ...]
    ) -> Rewrite | None:
        """The rewrite of ``history`` into the request, if it is a compaction shape: one
        assistant turn replaced suffices when the conversation was at pressure."""
        old_facts, old_messages = _sent_back(history)
        pressed = self._was_at_pressure(history)
        turns = MIN_DROPPED_TURNS_AT_PRESSURE if pressed else MIN_DROPPED_TURNS
        return infer_rewrite(old_facts, facts, old_messages, msgs, turns)

    def _response_replaced(self, history: _History, new: list[MessageFacts]) -> Rewrite | None:
        """A request that extends the last one with user text in place of the response it
        got (a summary one call after the last request), at pressure: the compaction that
        replaced the response. ``history.messages`` already holds the new messages."""
        if not history.expected or any(f.is_assistant or f.tool_results for f in new):
            return None  # the response was sent back (or none was given): an extension
        if not self._was_at_pressure(history):
            return None
        count = len(history.facts)
        old_facts, old_messages = _sent_back(history, count)
        return infer_rewrite(
            old_facts,
            [*history.facts, *new],
            old_messages,
            tuple(history.messages),
            MIN_DROPPED_TURNS_AT_PRESSURE,
        )

    @staticmethod
    def _replacement(
        history: _History, facts: list[MessageFacts], msgs: tuple[Any, ...]
    ) -> Rewrite | None:
        old_facts, old_messages = _sent_back(history)
        return replaced_whole(old_facts, facts, old_messages, msgs)

    def _shrinking(
        self, history: _History, facts: list[MessageFacts], msgs: tuple[Any, ...]
    ) -> Rewrite | None:
        """A whole-history replacement of a conversation the application named, if it
        shrinks what it replaces or came at pressure (else a new start under the id)."""
        rewrite = self._replacement(history, facts, msgs)
        if rewrite is None or rewrite.inserted_chars < rewrite.dropped_chars:
            return rewrite
        return rewrite if self._was_at_pressure(history) else None

    def _was_at_pressure(self, history: _History) -> bool:
        """The conversation's last measured context plus its last response, at pressure."""
        at_pressure = self.at_pressure
        if at_pressure is None:
            return False
        pending = sum(describe(m).chars for m in history.expected)
        return at_pressure(history.conversation_id, tokens_for_chars(pending))

    @staticmethod
    def _branch(
        candidates: Sequence[_History], facts: Sequence[MessageFacts], anchor: int
    ) -> tuple[_History, int] | None:
        """The candidate sharing the longest prefix beyond the anchor (a retry from there)."""
        best: tuple[_History, int] | None = None
        for history in candidates:
            common = common_head(history.facts, facts)
            if common > anchor and (best is None or common > best[1]):
                best = (history, common)
        return best

    def _by_summary(self, facts: Sequence[MessageFacts]) -> _History | None:
        for fact in facts:
            if fact.summary is not None:
                cid = self._summaries.get(hash(fact.summary))
                if cid is not None and cid in self._by_id:
                    return self._by_id[cid]
        return None

    def _by_shared_tail(self, system_key: int, facts: Sequence[MessageFacts]) -> _History | None:
        self._refresh_tails()
        marks = self._tail_marks
        sizes = {size for size, _ in marks}
        for fact in facts[1:]:
            if fact.chars not in sizes or (fact.chars, lead(fact.message)) not in marks:
                continue
            cid = self._by_tail.get(fact.key)
            history = self._by_id.get(cid) if cid is not None else None
            if history is not None and history.system_key == system_key:
                return history
        return None

    # ------------------------------------------------------------ summarizer calls

    def remember_summarizer_output(self, conversation_id: str, text: str) -> None:
        """A summarizer's answer for the conversation: the request that carries it next is
        the conversation's compaction (``inference.summarizer``)."""
        needle = output_needle(text)
        if needle is None:
            return
        with self._lock:
            self._outputs[conversation_id] = needle
            self._outputs.move_to_end(conversation_id)
            while len(self._outputs) > MAX_OUTPUTS:
                self._outputs.popitem(last=False)

    def _recent_histories(self) -> list[_History]:
        """The conversations a summarizer's call may draw on, the likeliest first: those
        last placed in this thread or task, then the process's most recently used (a
        framework may make each model call in a task of its own, so the summarizer's
        context need not have seen the agent's calls)."""
        found = [self._by_id.get(cid) for cid in reversed(self._recent.get())]
        ordered = [history for history in found if history is not None]
        for history in itertools.islice(reversed(self._by_id.values()), RECENT_SUMMARIZED):
            if history not in ordered:
                ordered.append(history)
        return ordered

    def _summarizer_of(
        self,
        candidates: Sequence[_History],
        system_key: int,
        facts: list[MessageFacts],
        msgs: tuple[Any, ...],
        *,
        inferred: bool = True,
    ) -> Placement | None:
        """The placement of a request that is a summarizer's call drawing on one of
        ``candidates`` by its own evidence: no tools offered, a summarize instruction in
        its last message, or in a system prompt that is not the conversation's own."""
        asking = self._asking
        if asking is None or asking.tools or not candidates:
            return None
        in_last = asks_to_summarize(last_text(facts))
        if not in_last and not asks_to_summarize(system_text(asking.system, facts)):
            return None
        keys = system_keys(system_key, facts)
        for history in candidates:
            if not in_last and system_keys(history.system_key, history.facts) == keys:
                continue  # the agent's own prompt asks for summaries: its turn
            if _draws_on(history, facts, msgs):
                return _summarizer_placement(history.conversation_id, facts, inferred)
        return None

    def _forced_summarizer(
        self, given_id: str | None, system_key: int, messages: Sequence[Any]
    ) -> Placement:
        """A call a framework's summarization hook made: in the conversation it draws on
        (the given one, else the most recent of this thread or task it carries messages
        of, else the most recent), remembered nowhere."""
        del system_key
        msgs = tuple(messages)
        facts = [describe(m) for m in msgs]
        history = self._by_id.get(given_id) if given_id is not None else None
        if history is None and given_id is None:
            recent = self._recent_histories()
            drawn = (h for h in recent if _draws_on(h, facts, msgs))
            history = next(drawn, recent[0] if recent else None)
        cid = history.conversation_id if history is not None else None
        cid = cid or given_id or new_conversation_id()
        return _summarizer_placement(cid, facts, given_id is None)

    def _asks_after(self, history: _History, new: list[MessageFacts]) -> bool:
        """An extension of ``history`` that is a summarizer's call: in place of the response
        it got, a message asking to summarize it, with no tools offered."""
        asking = self._asking
        if not history.expected or not new or asking is None or asking.tools:
            return False
        if any(f.is_assistant or f.tool_results for f in new):
            return False
        return asks_to_summarize(last_text(new))

    def _carrying_output(
        self, facts: list[MessageFacts], msgs: tuple[Any, ...], only: str | None = None
    ) -> tuple[_History, Rewrite | None] | None:
        """The conversation whose summarizer's answer the request carries, and the rewrite
        around it (None when it replaced nothing); None when it carries none."""
        if not self._outputs:
            return None
        for cid, needle in reversed(list(self._outputs.items())):
            history = self._by_id.get(cid)
            if history is None or (only is not None and cid != only):
                continue
            at = carrying(msgs, needle)
            if at is None:
                continue
            del self._outputs[cid]
            old_facts, old_messages = _sent_back(history)
            return history, summarized(old_facts, facts, old_messages, msgs, at)
        return None

    # ------------------------------------------------------------ storage

    def _extend(self, history: _History, added: list[Any], *, inferred: bool) -> Placement:
        """The placement of a request that extends ``history`` by ``added`` (already taken
        into its copy of the messages by :func:`_grow`)."""
        try:
            new = [describe(m) for m in added]
        except BaseException:
            # The copy must stay aligned with the facts: take the messages back out.
            del history.messages[len(history.facts) :]
            raise
        if self._outputs:
            self._outputs.pop(history.conversation_id, None)  # went on without the summary
        if self._asks_after(history, new):
            del history.messages[len(history.facts) :]  # a summarizer's call: nothing kept
            chars = history.chars + sum(f.chars for f in new)
            return Placement(
                history.conversation_id, inferred, (), context_chars=chars, summarizer=True
            )
        replaced = self._response_replaced(history, new)
        if replaced is not None:
            msgs = tuple(history.messages)
            del history.messages[len(history.facts) :]  # the copy as counted, then replaced
            return self._store(
                history.conversation_id, history.system_key, msgs,
                [*history.facts, *new], history.model,
                inferred=inferred, rewrite=replaced, start=replaced.new_start,
            )  # fmt: skip
        chars = history.chars
        for fact in new:
            chars += fact.chars
        history.facts.extend(new)
        self._retained_chars += chars - history.chars
        history.chars = chars
        history.expected = ()
        history.last_used = self._now
        self._by_id.move_to_end(history.conversation_id)
        self._stale[history.conversation_id] = None
        self._retained += len(added)
        self._bound()
        return Placement(history.conversation_id, inferred, tuple(new), context_chars=chars)

    def _store(
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
        self._drop(cid)
        chars = sum(f.chars for f in facts)
        history = _History(
            cid, _anchor(system_key, facts), system_key, list(msgs), facts, self._now, chars,
            model=model,
        )  # fmt: skip
        self._by_id[cid] = history
        opening, self._opening = self._opening, None
        if opening is not None and opening[0] is msgs:
            self._keep_signature(history, opening[1])
        peers = self._by_anchor.setdefault(history.anchor, [])
        peers.append(cid)
        del peers[:-MAX_PER_ANCHOR]
        self._stale[cid] = None
        self._retained += len(history.messages)
        self._retained_chars += chars
        self._bound()
        return Placement(
            cid,
            inferred,
            tuple(facts[start:]),
            rewrite=rewrite,
            context_chars=chars,
            first=first,
        )

    def _refresh_tails(self) -> None:
        """Index the last ``TAIL_KEYS`` keys of every history that changed since the last
        read (computing those keys, at most ``TAIL_KEYS`` per history, once each)."""
        by_id = self._by_id
        for cid in self._stale:
            history = by_id.get(cid)
            if history is not None:
                self._index_tail(history)
        self._stale.clear()

    def _index_tail(self, history: _History) -> None:
        old = history.tail_keys
        tail = history.facts[-TAIL_KEYS:]
        new = tuple([f.key for f in tail])
        self._count_marks(history.tail_marks, -1)
        history.tail_keys = new
        history.tail_marks = tuple([(f.chars, lead(f.message)) for f in tail])
        self._count_marks(history.tail_marks, 1)
        cid, by_tail = history.conversation_id, self._by_tail
        for key in old:
            # A key still in the tail is set again below: only the ones that left are dropped.
            if key not in new and by_tail.get(key) == cid:
                del by_tail[key]
        for key in new:
            by_tail[key] = cid

    def _bound(self) -> None:
        """Forget the least recently used histories beyond the bounds (not the newest)."""
        by_id = self._by_id
        while len(by_id) > self.max_histories or (
            (self._retained > self.max_messages or self._retained_chars > self.max_chars)
            and len(by_id) > 1
        ):
            self._drop(next(iter(by_id)))

    def _drop(self, cid: str) -> None:
        history = self._by_id.pop(cid, None)
        if history is None:
            return
        self._stale.pop(cid, None)
        self._retained -= len(history.messages)
        self._retained_chars -= history.chars
        peers = self._by_anchor.get(history.anchor)
        if peers is not None:
            if cid in peers:
                peers.remove(cid)
            if not peers:
                del self._by_anchor[history.anchor]
        for key in history.tail_keys:
            if self._by_tail.get(key) == cid:
                del self._by_tail[key]
        self._count_marks(history.tail_marks, -1)

    def _count_marks(self, marks: tuple[tuple[int, int], ...], step: int) -> None:
        counts = self._tail_marks
        for mark in marks:
            count = counts.get(mark, 0) + step
            if count:
                counts[mark] = count
            else:
                del counts[mark]

    def _expire(self) -> None:
        self._now = now = self.clock()
        limit = now - self.idle_seconds
        if self._oldest_used >= limit:
            return  # nothing can be idle yet: the oldest history was used after the limit
        while self._by_id:
            cid, oldest = next(iter(self._by_id.items()))
            if oldest.last_used >= limit:
                self._oldest_used = oldest.last_used
                return
            self._drop(cid)
        self._oldest_used = -math.inf


def _sent_back(
    history: _History, count: int | None = None
) -> tuple[list[MessageFacts], tuple[Any, ...]]:
    """The last request with the response it got, as the next request would send them
    back: their facts and their messages (the old side of a rewrite). ``count``: the
    last request's length, when the copy of its messages has taken new ones already."""
    old_facts = [*history.facts, *(describe(m) for m in history.expected)]
    messages = history.messages if count is None else history.messages[:count]
    return old_facts, (*messages, *history.expected)


def _falls(rewrite: Rewrite) -> bool:
    """Whether a whole-history replacement reclaims much: it replaced at least two model
    turns and its text is at most :data:`SUMMARY_FALL` of theirs."""
    turns = sum(1 for m in rewrite.dropped if describe(m).is_assistant)
    return turns >= MIN_DROPPED_TURNS and rewrite.inserted_chars <= (
        SUMMARY_FALL * rewrite.dropped_chars
    )


def _restates_task_only(rewrite: Rewrite) -> bool:
    """Whether the replacing text is no longer than :data:`WHOLE_HISTORY_TASK_LENGTH` times
    the task it replaces: room for the task restated, none for what the history found."""
    task = describe(rewrite.dropped[0]).chars if rewrite.dropped else 0
    return rewrite.inserted_chars <= WHOLE_HISTORY_TASK_LENGTH * task


def _draws_on(history: _History, facts: Sequence[MessageFacts], msgs: Sequence[Any]) -> bool:
    """Whether a request carries messages of ``history`` (beyond its system prompt), or the
    text of its latest ones (a transcript pasted into a prompt)."""
    own = {f.key for f in history.facts if f.role not in SYSTEM_ROLES}
    if any(f.role not in SYSTEM_ROLES and f.key in own for f in facts):
        return True
    text = "\n".join(text_of(m) for m in msgs[-2:])[-TRANSCRIPT_CHARS:]
    return carries_text(text, [*history.messages[-SNIPPET_MESSAGES:], *history.expected])


def _summarizer_placement(cid: str, facts: Sequence[MessageFacts], inferred: bool) -> Placement:
    chars = sum(f.chars for f in facts)
    return Placement(cid, inferred, (), context_chars=chars, summarizer=True)


def _by_response(candidates: Sequence[_History], messages: Sequence[Any]) -> list[_History]:
    """``candidates`` with those whose last response is the request's first new message
    first (each group in the order given)."""
    matching: list[_History] = []
    others: list[_History] = []
    for history in candidates:
        count = len(history.messages)
        expected = history.expected
        sent = messages[count] if expected and len(messages) > count else None
        if sent is not None and _same(describe(sent).key, expected[0]):
            matching.append(history)
        else:
            others.append(history)
    return [*matching, *others]


def _same(key: int, message: Any) -> bool:
    try:
        return describe(message).key == key
    except Exception:  # noqa: BLE001 - a foreign message that cannot be read matches nothing
        return False


def _after_summary(facts: Sequence[MessageFacts]) -> int:
    for index, fact in enumerate(facts):
        if fact.summary is not None:
            return index + 1
    return 0
