"""Per-conversation engine state across restarts: a bounded, versioned snapshot file.

The processor writes what its conversations' engine knows (every
``ConversationAnalyzer`` with its trackers, the turn marks of the
de-duplication, and how long each conversation has been idle) to
``<state.directory>/engine-state.jsonl`` every ``state.snapshot_interval_seconds``
and once more on SIGTERM after the reorder window was applied, and reads it at
start, before the queue is replayed. A livelock under way when a replica
restarts is then flagged on the next compaction, as if there was no restart.

File format, UTF-8 (ASCII in practice) JSON, one object a line::

    {"format": "otel-compaction.engine-state", "version": 1, "engine": "<16 hex>",
     "settings": "<16 hex>", "written_unix": 1764612345.5, "conversations": 2,
     "replay_keys": [1234, 5678]}
    {"id": "conv-a", "idle": 12.5, "mark": 17, "state": {"$o": "ConversationAnalyzer", ...}}
    {"id": "conv-b", "idle": 0.4, "mark": 9, "turn_ns": 1764612340000000000, "base": 5,
     "state": {...}}
    {"end": 2, "sha256": "<hex SHA-256 of every byte before this line>"}

(the header is one line; wrapped here). ``replay_keys`` holds the
de-duplication keys of items already applied whose request was still written
ahead, not released (a batch behind an older one whose conversation was still
in its reorder window): a restart replays that request, and these keys make its
applied items duplicates instead of turns counted twice (Claude Code's and
Codex's events carry no turn index for the mark to refuse). ``engine`` is
``snapshot_codec.engine_digest()`` (the layout of the engine's state; see
``processor/snapshot_codec.py`` for ``state``), ``settings`` the SHA-256 of the
detector settings, ``idle`` the seconds since the conversation's last item when
the file was written, ``mark`` the highest turn index applied (0: none),
``turn_ns`` the start of that turn's span (absent: unknown), ``base`` (only for a
conversation an agent process resumed, numbering from 1 again) the turns before
that process's turn 1 (``otlp/state.py``).
Conversations come least recently active first, the registry's LRU order.

Bounds: at most ``state.max_conversations`` conversations (the most recently
active) and ``state.max_bytes`` bytes (conversations dropped from the least
recently active end until the file fits); a larger file is not read.

Writing: a temporary file in the same directory, ``fsync``, ``os.replace`` over
the previous snapshot, ``fsync`` of the directory: after a crash at any point
the file is the previous snapshot or the new one, never a mixture.

Reading: no file is a first start. Only a regular file is read (``_files``, as
``analyze`` reads its inputs: a FIFO, a device or a directory at the path is refused
at once, never waited on) of at most ``state.max_bytes``. A path that is no regular
file or cannot be read (``unreadable``), a file that is too large, truncated, corrupt
(not JSON, a checksum mismatch, a value this engine cannot rebuild), of another
format version or engine layout, or written under other detector settings is
not used: :class:`SnapshotRejected` names the reason
(``semconv.SnapshotReason``), the service logs a warning, counts it in
``compaction.processor.snapshot.discarded`` and starts clean, and the file is
kept beside as ``engine-state.jsonl.rejected`` for diagnosis. Nothing is
restored from a rejected file, not even its readable part. A conversation's idle
time goes on counting while the processor is down: one idle past
``conversation_idle_seconds`` by the time it is read is not restored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from otel_compaction import _files as files
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.otlp.state import ConversationState
from otel_compaction.processor import snapshot_codec as codec
from otel_compaction.semconv import SnapshotReason

logger = logging.getLogger(__name__)

FORMAT: Final = "otel-compaction.engine-state"
VERSION: Final = 1
FILE_NAME: Final = "engine-state.jsonl"
_RESERVE = 512  # bytes kept for the header and the end line when bounding the file


class SnapshotRejected(Exception):
    """A snapshot exists but is not used; ``reason`` says why."""

    def __init__(self, reason: SnapshotReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Saved:
    """What one write put on disk."""

    conversations: int
    size: int
    left_out: int


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One conversation of a snapshot: its id, idle seconds when written, turn mark, state."""

    conversation_id: str
    idle: float
    mark: int
    state: dict[str, Any]
    base: int = 0
    turn_ns: int = 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot read from disk."""

    written_unix: float
    entries: list[SnapshotEntry]
    replay_keys: list[int] = field(default_factory=list)


def settings_digest(settings: Settings) -> str:
    """16 hex digits naming the detector settings a snapshot was written under."""
    blob = json.dumps(settings.model_dump(mode="json"), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode() + b"\n"


class SnapshotStore:
    """The snapshot file of one processor: ``save`` and ``load`` a ``ConversationState``.

    Args:
        directory: where the file lives (created if missing).
        settings: the detector settings (their digest goes in the header).
        max_conversations / max_bytes: the bounds of one file.
        wall: seconds since the epoch (injectable), for idle time across a stop.
    """

    def __init__(
        self,
        directory: Path,
        settings: Settings,
        *,
        max_conversations: int = 100_000,
        max_bytes: int = 256 << 20,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.path = directory / FILE_NAME
        self.settings = settings
        self.max_conversations = max_conversations
        self.max_bytes = max_bytes
        self._wall = wall
        self._settings_digest = settings_digest(settings)
        self._engine_digest = codec.engine_digest()
        directory.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ write

    def save(self, state: ConversationState, replay_keys: Sequence[int] = ()) -> Saved:
        """Write ``state`` atomically; raises ``OSError`` or ``SnapshotError`` (file unchanged).

        ``replay_keys``: the de-duplication keys of items applied from batches a restart
        would replay (``Pipeline.unreleased_keys``); they are taken as seen on ``load``.
        """
        tracked = state.tracked()
        limit = self.settings.conversation_idle_seconds
        alive = [t for t in tracked if t[1] <= limit]  # the others would expire on restore
        live = alive[-self.max_conversations :]
        keys = list(replay_keys)
        lines, size = [], _RESERVE + len(_line(keys))
        for analyzer, idle, mark in reversed(live):  # the most recent first, until full
            entry: dict[str, Any] = {"id": analyzer.conversation_id, "idle": idle, "mark": mark}
            base, turn_ns = (
                state.base(analyzer.conversation_id),
                state.turn_time(analyzer.conversation_id),
            )
            if turn_ns:
                entry["turn_ns"] = turn_ns  # tells a resumed conversation from a replayed turn
            if base:
                entry["base"] = base  # a conversation an agent process resumed
            entry["state"] = codec.encode_analyzer(analyzer)
            line = _line(entry)
            if size + len(line) > self.max_bytes:
                break
            lines.append(line)
            size += len(line)
        lines.reverse()
        header = {"format": FORMAT, "version": VERSION, "engine": self._engine_digest,
                  "settings": self._settings_digest, "written_unix": self._wall(),
                  "conversations": len(lines), "replay_keys": keys}  # fmt: skip
        body = b"".join([_line(header), *lines])
        end = _line({"end": len(lines), "sha256": hashlib.sha256(body).hexdigest()})
        self._replace(body + end)
        return Saved(len(lines), len(body) + len(end), len(alive) - len(lines))

    def _replace(self, data: bytes) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)  # whatever is there (a FIFO would block an open)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk: the partial copy would hold its space
            raise
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------------- read

    def load(self, state: ConversationState) -> int:
        """Restore the snapshot into ``state`` (fresh); return the conversations restored.

        0 when there is no file; ``SnapshotRejected`` (nothing restored, the file
        moved aside) when it cannot be used.
        """
        try:
            snapshot = self.read()
        except FileNotFoundError:
            return 0
        except SnapshotRejected:
            self._set_aside()
            raise
        lost = max(0.0, self._wall() - snapshot.written_unix)
        limit = self.settings.conversation_idle_seconds
        kept = [e for e in snapshot.entries if e.idle + lost <= limit]
        try:
            for entry in kept:  # every one rebuilds before any is adopted
                _probe(entry, self.settings)
        except Exception as exc:  # noqa: BLE001  # whatever a damaged value raises, it is not used
            self._set_aside()
            raise SnapshotRejected(SnapshotReason.CORRUPT, f"{self.path}: {exc}") from None
        state.remember(snapshot.replay_keys)
        for entry in kept:
            adopted = state.adopt(entry.conversation_id, entry.idle + lost, entry.mark,
                                  entry.base, entry.turn_ns)  # fmt: skip
            codec.apply_state(adopted, entry.state)
        return len(kept)

    def read(self) -> Snapshot:
        """The snapshot on disk, checked and decoded; ``SnapshotRejected`` when unusable."""
        try:
            data = files.read_bounded(self.path, self.max_bytes)
        except FileNotFoundError:
            raise
        except OSError as exc:  # a FIFO, a device, a directory, no permission: never blocks
            raise self._rejected(SnapshotReason.UNREADABLE, exc.strerror or str(exc)) from None
        if data is None:
            raise self._rejected(SnapshotReason.TOO_LARGE, f"over {self.max_bytes} bytes")
        if not data.endswith(b"\n"):
            raise self._rejected(SnapshotReason.TRUNCATED, "the last line is incomplete")
        lines = data[:-1].split(b"\n")
        header = self._header(lines[0])
        end = _parse(lines[-1]) if len(lines) > 1 else None
        if not isinstance(end, dict) or "end" not in end:
            raise self._rejected(SnapshotReason.TRUNCATED, "no end line")
        body = data[: len(data) - len(lines[-1]) - 1]
        if end.get("sha256") != hashlib.sha256(body).hexdigest():
            raise self._rejected(SnapshotReason.CORRUPT, "checksum mismatch")
        count = len(lines) - 2
        if not header.get("conversations") == end["end"] == count:
            raise self._rejected(SnapshotReason.CORRUPT, f"{count} lines, counts disagree")
        written = _number(header.get("written_unix"))
        if written is None:
            raise self._rejected(SnapshotReason.CORRUPT, "no written_unix in the header")
        keys = header.get("replay_keys", [])
        if not isinstance(keys, list) or not all(type(k) is int and k >= 0 for k in keys):
            raise self._rejected(SnapshotReason.CORRUPT, "replay_keys is no list of keys")
        entries = [self._entry(n, raw) for n, raw in enumerate(lines[1:-1], 2)]
        return Snapshot(written, entries, keys)

    def _header(self, raw: bytes) -> dict[str, Any]:
        header = _parse(raw)
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise self._rejected(SnapshotReason.CORRUPT, "the first line is not a snapshot header")
        if header.get("version") != VERSION or header.get("engine") != self._engine_digest:
            found = f"version {header.get('version')}, engine {header.get('engine')}"
            wanted = f"version {VERSION}, engine {self._engine_digest}"
            raise self._rejected(SnapshotReason.FOREIGN_VERSION, f"{found}; this is {wanted}")
        if header.get("settings") != self._settings_digest:
            raise self._rejected(
                SnapshotReason.SETTINGS_CHANGED, "written under other detector settings"
            )
        return header

    def _entry(self, number: int, raw: bytes) -> SnapshotEntry:
        entry = _parse(raw)
        fields = entry if isinstance(entry, dict) else {}
        cid, idle, mark = fields.get("id"), _number(fields.get("idle")), fields.get("mark")
        base, turn_ns = fields.get("base", 0), fields.get("turn_ns", 0)
        try:
            if type(cid) is not str or idle is None or type(mark) is not int:
                raise codec.SnapshotError("not a conversation line")
            if type(base) is not int or not 0 <= base <= mark or type(turn_ns) is not int:
                raise codec.SnapshotError(f"base {base!r} or turn_ns {turn_ns!r} is no mark")
            state = codec.decode_state(fields.get("state"))
            return SnapshotEntry(cid, idle, mark, state, base, turn_ns)
        except codec.SnapshotError as exc:
            raise self._rejected(SnapshotReason.CORRUPT, f"line {number}: {exc}") from None

    def _rejected(self, reason: SnapshotReason, detail: str) -> SnapshotRejected:
        return SnapshotRejected(reason, f"{self.path}: {detail}")

    def _set_aside(self) -> None:
        try:
            os.replace(self.path, self.path.with_name(self.path.name + ".rejected"))
        except OSError as exc:  # e.g. a directory over a file of that name: said, not raised
            logger.warning("could not move the rejected snapshot %s aside: %s", self.path, exc)


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def _probe(entry: SnapshotEntry, settings: Settings) -> None:
    """Rebuild one conversation on a throwaway analyzer and read its state back (raises)."""
    analyzer = ConversationAnalyzer(entry.conversation_id, settings)
    codec.apply_state(analyzer, entry.state)
    _ = analyzer.pressure, analyzer.phase, analyzer.compactions, analyzer.phase_turns
