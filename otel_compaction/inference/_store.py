"""The histories the tracker remembers, their indexes and their bounds.

One :class:`HistoryStore` per tracker: the last history of each recent conversation in
the order of use, indexed by anchor and by the keys of its last messages, bounded in
histories, messages and characters (the least recently used go first, never the
current one) and forgotten when idle. It reads no clock: the tracker passes the time
of each placement.

Not a ``BoundedMap`` (``_bounded``): three bounds at once, the newest history kept
whatever its size, and every history forgotten must leave the anchor and tail indexes.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from otel_compaction._bounded import BoundedMap
from otel_compaction.inference import carry
from otel_compaction.inference._placement import History, Request, anchor_of
from otel_compaction.inference.messages import MessageFacts, describe, ends, lead
from otel_compaction.inference.rewrite import Rewrite, edited_in_place

MAX_PER_ANCHOR = 8
"""Conversations remembered per anchor (the most recent last)."""
TAIL_KEYS = 8
"""Last messages of each history indexed by key (``find``, a shared verbatim tail)."""
SHARED_TAIL_SCAN = 64
"""Messages of a request looked up in the tail index at each of its ends (after its first
message). A compaction that kept a verbatim tail carries the old history's last messages
just before the messages new since its last call (the response sent back, tool results,
the next user message: a few, 64 leaves room for many parallel tool results), and right
after the summary when the tail it kept is short. Messages further from both ends are not
looked up, so the first call of a long new conversation marks (``lead``) at most
``2 * SHARED_TAIL_SCAN`` of its messages whatever the remembered histories are: its
history is read once (``describe``), not a second time."""


class HistoryStore:
    """The remembered histories of one tracker (not thread-safe: the tracker's lock guards it).

    Args:
        max_histories / max_messages / max_chars: the bounds (LRU, never the newest).
        idle_seconds: histories unused this long are forgotten.
    """

    def __init__(
        self, max_histories: int, max_messages: int, max_chars: int, idle_seconds: float
    ) -> None:
        self.max_histories = max_histories
        self.max_messages = max_messages
        self.max_chars = max_chars
        self.idle_seconds = idle_seconds
        self.by_id: OrderedDict[str, History] = OrderedDict()
        self._by_anchor: dict[int, list[str]] = {}
        self._by_tail: dict[int, str] = {}
        self._tail_marks: dict[tuple[int, int], int] = {}
        """How many indexed tail messages have each size and lead (``History.tail_marks``):
        a message of another size or lead cannot share a tail, so a new conversation's
        first call digests none of the messages it looks up but those marked so."""
        self._tail_sizes: dict[int, int] = {}
        """How many indexed tail messages have each size (the marks' first halves)."""
        self._stale: dict[str, None] = {}
        """Histories whose entries in ``_by_tail`` are behind their facts: brought up to
        date only before the tail index is read (rarely), so a continuing call computes no
        keys."""
        self._signed: BoundedMap[str, str] = BoundedMap(carry.MAX_SIGNATURES)
        """Conversations whose history holds a carry-over signature (the most recently
        signed kept)."""
        self.retained = 0
        """Messages held by all histories (``max_messages`` bounds it)."""
        self.retained_chars = 0
        """Characters of the messages held by all histories (``max_chars`` bounds it)."""
        self.now = 0.0
        """The time of the current placement (set by :meth:`expire`)."""
        self._oldest_used = -math.inf
        """A lower bound of the oldest history's ``last_used`` (histories are kept in the
        order of use, so it only grows): :meth:`expire` has nothing to do while it is
        recent."""

    def __len__(self) -> int:
        return len(self.by_id)

    def get(self, cid: str) -> History | None:
        """The history of ``cid``, if remembered."""
        return self.by_id.get(cid)

    def candidates(self, anchor: int) -> list[History]:
        """The histories of ``anchor``, the most recently stored first."""
        by_id = self.by_id
        return [by_id[c] for c in reversed(self._by_anchor.get(anchor, ()))]

    def most_recent(self, count: int) -> Iterator[History]:
        """The ``count`` most recently used histories, the most recent first."""
        return itertools.islice(reversed(self.by_id.values()), count)

    def save(self, cid: str, request: Request) -> History:
        """Remember ``request`` as the last history of ``cid`` (replacing the one it had),
        then forget the least recently used beyond the bounds."""
        self.drop(cid)
        facts, system_key = request.facts, request.system_key
        chars = sum([f.chars for f in facts])
        history = History(
            cid, anchor_of(system_key, facts), system_key, list(request.messages), facts,
            self.now, chars, model=request.model,
        )  # fmt: skip
        self.by_id[cid] = history
        peers = self._by_anchor.setdefault(history.anchor, [])
        peers.append(cid)
        del peers[:-MAX_PER_ANCHOR]
        self._stale[cid] = None
        self.retained += len(history.messages)
        self.retained_chars += chars
        self.bound()
        return history

    def extended(self, history: History, new: list[MessageFacts]) -> int:
        """Take the facts of the messages ``history``'s copy gained into it (used now);
        return its characters."""
        chars = history.chars
        for fact in new:
            chars += fact.chars
        history.facts.extend(new)
        self.retained_chars += chars - history.chars
        history.chars = chars
        history.expected = ()
        history.described_response = None
        history.last_used = self.now
        self.by_id.move_to_end(history.conversation_id)
        self._stale[history.conversation_id] = None
        self.retained += len(new)
        self.bound()
        return chars

    def reread(self, cid: str) -> tuple[Rewrite, int] | None:
        """The prune a history shows when read again (its messages shortened in place),
        and its characters now; None when nothing got shorter (``HistoryTracker.reread``)."""
        history = self.by_id.get(cid)
        if history is None:
            return None
        now = [describe(m) for m in history.messages]
        rewrite = edited_in_place(history.facts, now)
        if rewrite is None:
            return None
        chars = sum(f.chars for f in now)
        self.retained_chars += chars - history.chars
        history.facts, history.chars = now, chars
        history.carry = None  # its text changed: read again when needed
        self._stale[cid] = None
        return rewrite, chars

    def keep_signature(self, history: History, signature: carry.Signature) -> None:
        """Give ``history`` its carry-over signature, the least recently signed histories
        beyond ``carry.MAX_SIGNATURES`` losing theirs."""
        history.carry = signature
        for cid in self._signed.put(history.conversation_id, history.conversation_id):
            forgotten = self.by_id.get(cid)
            if forgotten is not None:
                forgotten.carry = None

    def signed(self, history: History) -> None:
        """``history``'s signature was read: the most recently signed."""
        self._signed.get(history.conversation_id)

    def by_tail(self, key: int) -> str | None:
        """The conversation whose last messages include one of ``key``, if remembered."""
        self._refresh_tails()
        found = self._by_tail.get(key)
        return found if found is not None and found in self.by_id else None

    def by_shared_tail(self, system_key: int, facts: Sequence[MessageFacts]) -> History | None:
        """A history of the same system prompt whose last messages the request carries."""
        self._refresh_tails()
        marks, sizes = self._tail_marks, self._tail_sizes
        for fact in ends(facts, SHARED_TAIL_SCAN, start=1):
            if fact.chars not in sizes or (fact.chars, lead(fact.message)) not in marks:
                continue
            cid = self._by_tail.get(fact.key)
            history = self.by_id.get(cid) if cid is not None else None
            if history is not None and history.system_key == system_key:
                return history
        return None

    def _refresh_tails(self) -> None:
        """Index the last ``TAIL_KEYS`` keys of every history that changed since the last
        read (computing those keys, at most ``TAIL_KEYS`` per history, once each)."""
        by_id = self.by_id
        for cid in self._stale:
            history = by_id.get(cid)
            if history is not None:
                self._index_tail(history)
        self._stale.clear()

    def _index_tail(self, history: History) -> None:
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

    def bound(self) -> None:
        """Forget the least recently used histories beyond the bounds (not the newest)."""
        by_id = self.by_id
        while len(by_id) > self.max_histories or (
            (self.retained > self.max_messages or self.retained_chars > self.max_chars)
            and len(by_id) > 1
        ):
            self.drop(next(iter(by_id)))

    def drop(self, cid: str) -> None:
        """Forget the history of ``cid`` and its index entries."""
        history = self.by_id.pop(cid, None)
        if history is None:
            return
        self._stale.pop(cid, None)
        self.retained -= len(history.messages)
        self.retained_chars -= history.chars
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
        for mark in marks:
            _count(self._tail_marks, mark, step)
            _count(self._tail_sizes, mark[0], step)

    def expire(self, now: float) -> None:
        """Start a placement at ``now``: forget the histories idle since ``idle_seconds``."""
        self.now = now
        limit = now - self.idle_seconds
        if self._oldest_used >= limit:
            return  # nothing can be idle yet: the oldest history was used after the limit
        while self.by_id:
            cid, oldest = next(iter(self.by_id.items()))
            if oldest.last_used >= limit:
                self._oldest_used = oldest.last_used
                return
            self.drop(cid)
        self._oldest_used = -math.inf


def _count(counts: dict[Any, int], key: Any, step: int) -> None:
    count = counts.get(key, 0) + step
    if count:
        counts[key] = count
    else:
        del counts[key]
