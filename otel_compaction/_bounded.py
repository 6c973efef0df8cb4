"""The one bounded map of the package: at most ``limit`` entries, least recently used out first;
and the one bounded set of integer keys (:class:`RecentKeys`, packed: the processor's
de-duplication memory).

Every memory the package keeps per distinct key that traffic decides, whether a memo
(parsed categories, filter steps, shared attribute values, metric attribute sets, the
facts of a conversation's anchor messages) or state it must forget some day
(compaction span contexts, response ids, conversations' turn marks, summaries and
summarizer answers waiting for their request), is a :class:`BoundedMap`: the memory
bound is the same for all of them, and the entries kept are the ones in use. Where
one value can be large (it holds a caller's message), the map is bounded in size as
well (``max_bytes``, with the ``size`` of each value). One store is not a map of
this kind and says so: the history tracker's remembered histories
(``inference._store``), bounded in histories, messages and characters at once, which
keeps the newest history whatever its size and updates its indexes as it forgets.

``functools.lru_cache`` remains in ten places, each the memo of a pure function of
immutable, hashable arguments, kept because it is the standard library's thread-safe
memo over several arguments and needs no wrapper of ours. Eight are keyed by
configuration (a handful of distinct keys in a process) and return a value whose size
the configuration fixes: the detectors split by the analyzer (``engine.analyzer._split``), the
hold rules and the shared categorizer of a setting (``signals.phase``; the
categorizer's own memories are bounded maps), the decay weights of the attention
window (``signals.pressure``), the transition and emission matrices and filter tables
of a phase set (``signals.phase_model``), the heading pattern of a set of summary names
(``lineage.schema``). Two are keyed by the model names traffic brings and return an int:
the context window of a model (``signals.windows.table_window``, 1,024 entries) and
LiteLLM's (``instrument.litellm._handler._table_window``, 256 entries); what they hold
is bounded in entries, and in bytes only as far as model names are short. A memo keyed
by traffic whose values grow with its input belongs here instead.

Why LRU for all of them, rather than emptying a full table or no longer adding
to it: a memo's answers never depend on what it forgot (a miss recomputes the
same value), so the policy only decides what stays fast, and LRU keeps the hot
keys where a cleared table drops them too and a frozen one never learns new
ones. For state, forgetting the least recently used entry forgets what is
least likely to be asked for again, and which entry that is depends only on
the order of the calls, never on timing or on hashing: the same input gives
the same telemetry in every process.

Thread-safe without a lock of its own when bounded in entries only: every
operation is one or two atomic ``OrderedDict`` calls (atomic under the GIL, and
per object in free-threaded builds). Two racing inserts may evict one entry more
than needed, and each evicted value is returned to exactly one caller. Callers
that need several operations to be one (get-or-create), and every user of a map
bounded in size (its running total is several steps), hold their own lock.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, Final, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()


class BoundedMap(Generic[K, V]):
    """A map of at most ``limit`` entries that forgets the least recently used first.

    Args:
        limit: the most entries kept (0 keeps none).
        max_bytes: the most bytes the values kept may hold together, by ``size``
            (None: bounded in entries only). A value larger than it is not kept (and
            pushes out nothing).
        size: the bytes one value holds (approximately, and the same while it is kept).
    """

    __slots__ = ("_bytes", "_data", "_size", "limit", "max_bytes")

    def __init__(
        self, limit: int, *, max_bytes: int | None = None, size: Callable[[V], int] | None = None
    ) -> None:
        if (max_bytes is None) != (size is None):
            raise ValueError("max_bytes and size go together")
        self._data: OrderedDict[K, V] = OrderedDict()
        self.limit = limit
        """The most entries kept (0 keeps none)."""
        self.max_bytes = max_bytes
        """The most bytes kept, by ``size`` (None: no bound in bytes)."""
        self._size = size
        self._bytes = 0

    @property
    def nbytes(self) -> int:
        """The bytes the values kept hold, by ``size`` (0 when bounded in entries only)."""
        return self._bytes

    def get(self, key: K) -> V | None:
        """The value of ``key``, refreshed as the most recent (None if unknown)."""
        data = self._data
        value = data.get(key, _MISSING)
        if value is _MISSING:
            return None
        try:  # noqa: SIM105 - _touch inline: hit several times a call, a call costs
            data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: nothing to refresh
            pass
        return value  # type: ignore[no-any-return]

    def peek(self, key: K) -> V | None:
        """The value of ``key`` without refreshing it (None if unknown)."""
        return self._data.get(key)

    def cached(self, key: K, compute: Callable[[K], V]) -> V:
        """The value of ``key``, computed by ``compute(key)`` and kept when unknown."""
        data = self._data
        value = data.get(key, _MISSING)
        if value is _MISSING:
            computed = compute(key)
            self.put(key, computed)
            return computed
        try:  # noqa: SIM105 - _touch inline: hit several times a call, a call costs
            data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: nothing to refresh
            pass
        return value  # type: ignore[no-any-return]

    def put(self, key: K, value: V) -> list[V]:
        """Keep ``key`` as the most recent entry; return the values it pushed out."""
        if self._size is not None:
            return self._put_sized(key, value, self._size)
        data = self._data
        data[key] = value
        self._touch(key)
        evicted: list[V] = []
        while len(data) > self.limit:
            try:
                evicted.append(data.popitem(last=False)[1])
            except KeyError:  # another thread emptied it meanwhile
                break
        return evicted

    def _put_sized(self, key: K, value: V, size: Callable[[V], int]) -> list[V]:
        data = self._data
        old = data.pop(key, _MISSING)
        if old is not _MISSING:
            self._bytes -= size(old)
        weight = size(value)
        limit, max_bytes = self.limit, self.max_bytes or 0
        if weight > max_bytes:
            return [value]  # too large to keep: it pushes out nothing
        data[key] = value
        self._bytes += weight
        evicted: list[V] = []
        while data and (len(data) > limit or self._bytes > max_bytes):
            gone = data.popitem(last=False)[1]
            self._bytes -= size(gone)
            evicted.append(gone)
        return evicted

    def pop(self, key: K) -> V | None:
        """Remove ``key`` and return its value (None if unknown)."""
        value = self._data.pop(key, _MISSING)
        if value is _MISSING:
            return None
        if self._size is not None:
            self._bytes -= self._size(value)
        return value  # type: ignore[no-any-return]

    def oldest(self) -> tuple[K, V] | None:
        """The least recently used entry, without refreshing it (None when empty)."""
        try:
            return next(iter(self._data.items()))
        except (StopIteration, RuntimeError):  # empty, or changed while we looked
            return None

    def drain(self) -> list[V]:
        """Remove every entry; return their values, least recent first."""
        values = []
        while True:
            try:
                values.append(self._data.popitem(last=False)[1])
            except KeyError:
                self._bytes = 0
                return values

    def keys(self) -> list[K]:
        """The keys, least recent first (a copy)."""
        return list(self._data)

    def items(self) -> list[tuple[K, V]]:
        """The entries, least recent first (a copy)."""
        return list(self._data.items())

    def values(self) -> list[V]:
        """The values, least recent first (a copy)."""
        return list(self._data.values())

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def _touch(self, key: K) -> None:
        try:  # noqa: SIM105 - on every hit: try costs nothing, contextlib.suppress a call
            self._data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: nothing to refresh
            pass


_FOLD: Final = 2**61 - 1
"""Python's int hash modulus: a key's fingerprint is ``hash(key) % _FOLD + 1`` (0 marks an
empty slot); ``hash`` of an int is the same in every process (no randomization)."""


class RecentKeys:
    """A bounded set of recently seen integer keys (the oldest forgotten first), packed.

    The processor's de-duplication memory: 262,144 span keys by default, each a 192-bit
    int (trace id and span id). As a ``set`` and a ``deque`` of ints that took about 110
    bytes a key (the int object, the set's slot with its slack, the deque's pointer), 29 MB;
    here a key is its 61-bit fingerprint in two preallocated ``array('q')``s: an
    open-addressing table of twice the limit (linear probing, removal by backward shift)
    and a ring of the limit in arrival order, 24 bytes a key whatever the traffic (6 MiB
    at the default). Two keys are taken as one when their fingerprints are equal: for
    distinct random ids, about 1 in 10**13 per key at the default limit (the span is
    then counted as a ``duplicate``). Which keys are kept depends only on the order of the
    calls. Not thread-safe (the processor's pipeline thread owns it).
    """

    __slots__ = ("_limit", "_mask", "_next", "_ring", "_size", "_table")

    def __init__(self, limit: int) -> None:
        self._limit = max(0, limit)
        slots = 1
        while slots < 2 * self._limit:
            slots *= 2
        self._mask = slots - 1
        self._table = array("q", bytes(8 * slots)) if self._limit else array("q")
        self._ring = array("q", bytes(8 * self._limit))
        self._next = 0
        self._size = 0

    def add(self, key: int) -> bool:
        """Remember ``key``; False when it was already remembered."""
        if not self._limit:
            return True
        fingerprint = hash(key) % _FOLD + 1
        if self._slot(fingerprint) >= 0:
            return False
        ring, at = self._ring, self._next
        if self._size == self._limit:
            self._remove(ring[at])
        else:
            self._size += 1
        table, mask = self._table, self._mask
        i = fingerprint & mask
        while table[i]:
            i = (i + 1) & mask
        table[i] = fingerprint
        ring[at] = fingerprint
        self._next = (at + 1) % self._limit
        return True

    def _slot(self, fingerprint: int) -> int:
        """The table slot holding ``fingerprint``, -1 when it is not there."""
        table, mask = self._table, self._mask
        i = fingerprint & mask
        while value := table[i]:
            if value == fingerprint:
                return i
            i = (i + 1) & mask
        return -1

    def _remove(self, fingerprint: int) -> None:
        """Empty ``fingerprint``'s slot and shift back the run after it (no tombstones)."""
        table, mask = self._table, self._mask
        hole = self._slot(fingerprint)
        j = hole
        while value := table[(j := (j + 1) & mask)]:
            home = value & mask
            # The value stays unless its home lies cyclically outside (hole, j].
            if (home - hole - 1) & mask >= (j - hole) & mask:
                table[hole] = value
                hole = j
        table[hole] = 0

    def __len__(self) -> int:
        return self._size
