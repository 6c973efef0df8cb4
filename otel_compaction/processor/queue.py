"""The persistent forwarding queue: one file per batch, FIFO, survives restarts.

Like the Collector's ``sending_queue`` with ``file_storage``: what the receiver
accepted is on disk before the pipeline works on it, so neither a downstream
outage nor a restart (SIGTERM, or a crash) loses it.

A batch is a file ``<seq>-<signal>-<items>.<state>`` in the queue directory:

* ``raw``: accepted, not processed yet (enrich mode writes the request as it
  came; after a restart these are processed again);
* ``ready``: what goes downstream (flagged spans, or finding spans); a raw
  batch the processor did not change becomes ready by a rename.

Files are written to a temporary name and renamed, so a crash leaves either
the old or the new file, never half of one; ``fsync=True`` also survives a
power cut. Batches leave in ``seq`` order; a ``raw`` head blocks the ones
behind it until it is ready, which keeps each conversation's order.

A write the file system refuses (a full disk: ``ENOSPC``, a quota, a read-only
remount) leaves no partial file behind and raises :class:`QueueUnwritable`;
``write_error`` says why until a write succeeds again (``probe`` tries one
when nothing else writes), so the receivers can refuse with "retry later" and
the health endpoints can say what is wrong.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from otel_compaction.otlp.decode import Signal

_SIGNALS = {s.spec.name: s for s in Signal}


class QueueFull(Exception):
    """The queue is at its batch or byte limit; the caller must push back."""


class QueueUnwritable(Exception):
    """The file system refused a write (``cause``: the ``OSError``); nothing was written."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(describe_os_error(cause))
        self.cause = cause


def describe_os_error(exc: OSError) -> str:
    """``No space left on device (errno 28)``: the reason of an ``OSError``, without paths."""
    if exc.errno is not None and exc.strerror:
        return f"{exc.strerror} (errno {exc.errno})"
    return str(exc) or type(exc).__name__


@dataclass(slots=True)
class Entry:
    """One queued batch (its bytes stay on disk until read)."""

    seq: int
    signal: Signal
    items: int
    size: int
    ready: bool

    def name(self) -> str:
        """The file name of this entry."""
        state = "ready" if self.ready else "raw"
        return f"{self.seq:016d}-{self.signal.spec.name}-{self.items}.{state}"


class PersistentQueue:
    """A bounded FIFO of serialized OTLP requests in one directory.

    Thread-safe: receivers reserve, the pipeline completes, the forwarder reads
    and removes.
    """

    def __init__(
        self, directory: Path, *, max_batches: int = 10_000, max_bytes: int = 512 << 20,
        fsync: bool = False,
    ) -> None:  # fmt: skip
        self.directory = directory
        self.max_batches = max_batches
        self.max_bytes = max_bytes
        self._fsync = fsync
        self._lock = threading.Condition()
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._bytes = 0
        self._write_error: tuple[str, float] | None = None
        directory.mkdir(parents=True, exist_ok=True)
        self._load()
        self._next = max(self._entries, default=0) + 1

    def _load(self) -> None:
        found: dict[int, Entry] = {}
        for path in sorted(self.directory.iterdir()):
            entry = _parse_name(path)
            if entry is None:
                if path.name.endswith(".tmp"):
                    path.unlink(missing_ok=True)  # a write the crash interrupted
                continue
            entry.size = path.stat().st_size
            old = found.get(entry.seq)
            if old is not None and old.ready:
                path.unlink(missing_ok=True)  # crashed between write and unlink
                continue
            if old is not None:
                (self.directory / old.name()).unlink(missing_ok=True)
            found[entry.seq] = entry
        for seq in sorted(found):
            self._entries[seq] = found[seq]
            self._bytes += found[seq].size

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def size_bytes(self) -> int:
        """Bytes of all queued batches."""
        with self._lock:
            return self._bytes

    def has_room(self, size: int = 0) -> bool:
        """Whether a batch of ``size`` bytes would fit now."""
        with self._lock:
            return len(self._entries) < self.max_batches and self._bytes + size <= self.max_bytes

    def put(self, signal: Signal, data: bytes, items: int, *, ready: bool) -> int:
        """Write a batch at the tail and return its sequence number (raises ``QueueFull``)."""
        with self._lock:
            if not (
                len(self._entries) < self.max_batches and self._bytes + len(data) <= self.max_bytes
            ):
                raise QueueFull(f"{len(self._entries)} batches, {self._bytes} bytes queued")
            entry = Entry(self._next, signal, items, len(data), ready)
            self._write(entry, data)  # raises QueueUnwritable: the seq is not used
            self._next += 1
            self._entries[entry.seq] = entry
            self._bytes += entry.size
            self._lock.notify_all()
            return entry.seq

    def complete(self, seq: int, data: bytes | None, items: int) -> None:
        """Replace a raw batch by its processed form, ready to send (None: the raw bytes)."""
        with self._lock:
            old = self._entries.get(seq)
            if old is None:
                return
            if data is None:
                # Unchanged: the file becomes ready by a rename (atomic, like a write).
                new = Entry(seq, old.signal, items, old.size, True)
                os.replace(self.directory / old.name(), self.directory / new.name())
            else:
                new = Entry(seq, old.signal, items, len(data), True)
                self._write(new, data)
                if old.name() != new.name():
                    (self.directory / old.name()).unlink(missing_ok=True)
            self._entries[seq] = new
            self._bytes += new.size - old.size
            self._lock.notify_all()

    def read(self, seq: int) -> bytes | None:
        """The bytes of a queued batch (None when it is not queued)."""
        with self._lock:
            entry = self._entries.get(seq)
            if entry is None:
                return None
            return (self.directory / entry.name()).read_bytes()

    def raw_entries(self) -> list[tuple[Entry, bytes]]:
        """Raw batches with their bytes (to process again after a restart)."""
        with self._lock:
            entries = [e for e in self._entries.values() if not e.ready]
        return [(e, (self.directory / e.name()).read_bytes()) for e in entries]

    def head(self, timeout: float | None = None) -> tuple[Entry, bytes] | None:
        """The oldest batch if it is ready to send, waiting up to ``timeout`` seconds."""
        with self._lock:
            self._lock.wait_for(self._head_ready, timeout)
            if not self._head_ready():
                return None
            entry = next(iter(self._entries.values()))
        return entry, (self.directory / entry.name()).read_bytes()

    def _head_ready(self) -> bool:
        return bool(self._entries) and next(iter(self._entries.values())).ready

    def remove(self, seq: int) -> None:
        """Delete a batch that was delivered (or given up on)."""
        with self._lock:
            entry = self._entries.pop(seq, None)
            if entry is None:
                return
            self._bytes -= entry.size
            (self.directory / entry.name()).unlink(missing_ok=True)
            self._lock.notify_all()

    def wait_empty(self, timeout: float) -> bool:
        """Block until the queue is empty or ``timeout`` passes; True when empty."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._entries, timeout)

    def wake(self) -> None:
        """Wake threads blocked in ``head`` (shutdown)."""
        with self._lock:
            self._lock.notify_all()

    @property
    def write_error(self) -> str | None:
        """Why the last write failed (None: it succeeded), with how long ago it started."""
        with self._lock:
            failing = self._write_error
        if failing is None:
            return None
        reason, since = failing
        return f"{reason}, for {time.monotonic() - since:.0f} s"

    def probe(self) -> bool:
        """Try a small write (nothing else is writing); True and the error cleared if it works."""
        tmp = self.directory / ".probe.tmp"
        with self._lock:
            try:
                self._write_file(tmp, b"\0" * 4096, fsync=False)
            except OSError as exc:
                self._failed(exc)
                return False
            finally:
                tmp.unlink(missing_ok=True)
            self._write_error = None
            return True

    def _write(self, entry: Entry, data: bytes) -> None:
        final = self.directory / entry.name()
        tmp = final.with_name(final.name + ".tmp")
        try:
            self._write_file(tmp, data, fsync=self._fsync)
            os.replace(tmp, final)
        except OSError as exc:
            tmp.unlink(missing_ok=True)  # a partial file would hold the space it took
            self._failed(exc)
            raise QueueUnwritable(exc) from exc
        self._write_error = None

    def _failed(self, exc: OSError) -> None:
        if self._write_error is None:
            self._write_error = (describe_os_error(exc), time.monotonic())

    @staticmethod
    def _write_file(path: Path, data: bytes, *, fsync: bool) -> None:
        with open(path, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())


def _parse_name(path: Path) -> Entry | None:
    stem, _, state = path.name.rpartition(".")
    if state not in ("raw", "ready"):
        return None
    parts = stem.split("-")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        return None
    signal = _SIGNALS.get(parts[1])
    if signal is None:
        return None
    return Entry(int(parts[0]), signal, int(parts[2]), 0, state == "ready")
