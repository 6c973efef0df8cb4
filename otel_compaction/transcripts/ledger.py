"""Records read once across files: what a resumed, forked or sub-agent transcript repeats.

Claude Code writes a resumed or forked session (``claude --resume``, ``--fork-session``)
to a new file that starts with a copy of its parent's records, and a compaction
sub-agent (``subagents/agent-acompact-*.jsonl``) starts with a copy of its parent
from the compaction on: the same ``uuid``, timestamps and ``compactMetadata``, only
``sessionId`` or ``isSidechain`` rewritten. Read as sessions of their own, every
compaction of the parent was counted again in each of them. A :class:`RecordLedger`
shared by every file of one run remembers each record read (by a 64-bit digest of its
``uuid``, or of its content when it has none) and the file that held it first; a record
seen before is a repeat, read once, and the ledger counts which file repeats which.

What it costs: 24 to 48 bytes per record read (an open-addressing table of 64-bit
digests and file numbers, 12 bytes a slot, a quarter to a half full), whatever the
record's size. Two records
share a digest with odds of about n²/2⁶⁵ (one in 37 million for a million records).
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass

_EMPTY = 0
"""A free slot of the table (a digest of 0 is stored as 1)."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """Two files that share records: ``file`` continues ``earlier`` (it starts with a copy
    of ``repeated`` of its records, and adds ``added`` of its own)."""

    file: str
    earlier: str
    repeated: int
    added: int

    def to_json(self) -> dict[str, object]:
        """The entry of the report's ``continuations`` list."""
        return {
            "file": self.file,
            "continues": self.earlier,
            "repeated_records": self.repeated,
            "new_records": self.added,
        }

    def __str__(self) -> str:
        return (
            f"{self.file} continues {self.earlier} ({self.repeated} records repeated, "
            f"counted once; {self.added} new)"
        )


class RecordLedger:
    """Every record read in one run, and the file that held it first."""

    __slots__ = ("_added", "_files", "_first", "_opens_with_copy", "_repeats", "_sidechain")

    def __init__(self) -> None:
        self._first = _DigestTable()
        self._files: list[str] = []
        self._added: list[int] = []
        self._repeats: dict[tuple[int, int], int] = {}
        self._opens_with_copy: list[bool | None] = []
        self._sidechain: list[bool] = []

    def start_file(self, name: str) -> int:
        """Begin a file; its index names it in :meth:`claim`."""
        self._files.append(name)
        self._added.append(0)
        self._opens_with_copy.append(None)
        self._sidechain.append(False)
        return len(self._files) - 1

    def claim(self, keys: tuple[str, ...], file: int, sidechain: bool = False) -> bool:
        """Whether a record of ``file`` is read now: none of its ``keys`` (its ``uuid``,
        and what else names it) was seen before. A repeat, of this file or an earlier one,
        is counted once. ``sidechain``: the file's first record is a sub-agent's."""
        digests = [_digest(key) for key in keys]
        found = [self._first.get(digest) for digest in digests]
        first = next((f for f in found if f is not None), None)
        if self._opens_with_copy[file] is None:
            self._opens_with_copy[file] = first is not None and first != file
            self._sidechain[file] = sidechain
        for digest, known in zip(digests, found, strict=True):
            if known is None:
                self._first.put(digest, file)
        if first is None:
            self._added[file] += 1
            return True
        if first != file:
            pair = (file, first)
            self._repeats[pair] = self._repeats.get(pair, 0) + 1
        return False

    def continuations(self) -> list[Continuation]:
        """Which file continues which, in reading order.

        A file that adds nothing to an earlier one with more is that one's beginning; else
        a sub-agent's transcript continues the session it copies; else the file that
        opens with the copy (a resumed or forked session) continues the other. A file
        that adds nothing at all is a copy of the earlier one.
        """
        out = []
        for (later, first), count in sorted(self._repeats.items()):
            if self._added[later] == 0 and self._added[first] > count:
                child, parent = first, later  # ``later`` is ``first``'s beginning
            elif self._sidechain[later] != self._sidechain[first]:
                child, parent = (later, first) if self._sidechain[later] else (first, later)
            elif self._added[later] == 0 or self._opens_with_copy[later]:
                child, parent = later, first  # ``later`` opens with a copy (or is one)
            else:
                child, parent = first, later  # ``first`` opened with a copy of ``later``
            own = self._added[child] - (count if child == first else 0)
            out.append(Continuation(self._files[child], self._files[parent], count, own))
        return out


def _digest(key: str) -> int:
    """A 64-bit digest of ``key``, never 0 (the table's free slot)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") or 1


class _DigestTable:
    """64-bit digest -> file number, in two flat arrays with linear probing (12 bytes a
    slot, kept at most half full): a ``dict`` of ints costs about 90 bytes an entry."""

    __slots__ = ("_count", "_files", "_keys", "_mask")

    def __init__(self, slots: int = 1024) -> None:
        self._keys = array("Q", bytes(8 * slots))
        self._files = array("I", bytes(4 * slots))
        self._mask = slots - 1
        self._count = 0

    def get(self, digest: int) -> int | None:
        """The file number stored for ``digest``, or None."""
        keys, mask = self._keys, self._mask
        slot = digest & mask
        while (key := keys[slot]) != _EMPTY:
            if key == digest:
                return self._files[slot]
            slot = (slot + 1) & mask
        return None

    def put(self, digest: int, file: int) -> None:
        """Store a digest not yet in the table."""
        if 2 * (self._count + 1) > len(self._keys):
            self._grow()
        keys, mask = self._keys, self._mask
        slot = digest & mask
        while keys[slot] != _EMPTY:
            slot = (slot + 1) & mask
        keys[slot] = digest
        self._files[slot] = file
        self._count += 1

    def _grow(self) -> None:
        old = zip(self._keys, self._files, strict=True)
        slots = 2 * len(self._keys)
        self._keys = array("Q", bytes(8 * slots))
        self._files = array("I", bytes(4 * slots))
        self._mask, self._count = slots - 1, 0
        for key, file in old:
            if key != _EMPTY:
                self.put(key, file)
