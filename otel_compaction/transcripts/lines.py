"""Reading JSON Lines files: broken lines are reported with file and line, then skipped.

Every reader goes through :func:`read_json_lines`, so every format treats a
malformed line the same way: one :class:`SkippedLine` in the
:class:`Diagnostics`, and the rest of the file is still read.

What a file can cost is bounded: only regular files are opened
(:func:`open_regular`: a FIFO, a device such as ``/dev/zero`` or a directory is
refused without blocking), a line longer than :data:`MAX_LINE_BYTES` is skipped
without being held, and JSON's own rules hold (``NaN`` and ``Infinity``, which
Python's reader accepts, are not JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from otel_compaction import _files as files
from otel_compaction.transcripts.progress import Progress

MAX_KEPT = 1000
"""Skipped lines kept in detail; past that they are only counted."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is reported and skipped, never held in memory whole."""

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""The largest file read whole (one pretty-printed OTLP/JSON document)."""

RECORD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, RecursionError)
"""What a reader catches around one record: the record is skipped, the file read on."""

_MAX_ERROR_CHARS = 200


class TranscriptError(Exception):
    """A file that could not be read at all; the message names the file."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line that was not analyzed, and why."""

    file: str
    line: int
    error: str

    def to_json(self) -> dict[str, object]:
        """The entry of the report's ``skipped`` list."""
        return {"file": self.file, "line": self.line, "error": self.error}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.error}"


@dataclass(slots=True)
class Diagnostics:
    """What went wrong while reading, without stopping the reading.

    ``on_skip`` is called with each skipped line as it is found (the CLI prints
    them to stderr); at most :data:`MAX_KEPT` are kept, all are counted.
    """

    on_skip: Callable[[SkippedLine], None] | None = None
    skipped: list[SkippedLine] = field(default_factory=list)
    skipped_count: int = 0
    on_note: Callable[[SkippedLine], None] | None = None
    note_count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    """Every skipped line counted by :func:`reason_of` its error."""
    by_file: dict[str, int] = field(default_factory=dict)
    """Every skipped line counted by file, in the order the files were read."""
    first_by_reason: dict[str, str] = field(default_factory=dict)
    """Where each reason was first met (``FILE:LINE``)."""

    def skip(self, file: str | Path, line: int, error: str) -> None:
        """Record one skipped line."""
        entry = SkippedLine(str(file), line, error[:_MAX_ERROR_CHARS])
        self.skipped_count += 1
        reason = reason_of(error)
        self.by_reason[reason] = self.by_reason.get(reason, 0) + 1
        self.first_by_reason.setdefault(reason, f"{entry.file}:{line}")
        self.by_file[entry.file] = self.by_file.get(entry.file, 0) + 1
        if len(self.skipped) < MAX_KEPT:
            self.skipped.append(entry)
        if self.on_skip is not None:
            self.on_skip(entry)

    def note(self, file: str | Path, line: int, message: str) -> None:
        """Say something about a line that was read, but not whole (a field missing)."""
        self.note_count += 1
        if self.on_note is not None:
            self.on_note(SkippedLine(str(file), line, message[:_MAX_ERROR_CHARS]))


def reason_of(error: str) -> str:
    """The kind of a skip, without its details: the error up to its first ``: `` or `` (``
    (``invalid JSON: Expecting value...`` is ``invalid JSON``)."""
    cut = len(error)
    for mark in (": ", " ("):
        found = error.find(mark)
        if 0 < found < cut:
            cut = found
    return error[:cut][:_MAX_ERROR_CHARS]


def parse_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One line as a JSON object: ``(object, None)``, else ``(None, error)`` (blank: no error)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    text = text.strip().lstrip("\ufeff")
    if not text:
        return None, None
    try:
        value = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"not a JSON object (a JSON {type(value).__name__})"
    return value, None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading; anything else is refused at once, without blocking
    (``otel_compaction._files``, shared with the processor's state snapshot).

    Raises:
        TranscriptError: the file cannot be opened, or is a FIFO, a device, a directory...
    """
    try:
        return files.open_regular(path)
    except OSError as exc:
        raise TranscriptError(path, exc.strerror or str(exc)) from None


def read_document(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> bytes | None:
    """The whole file, or None when it is larger than ``limit`` or cannot be read."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
    except (TranscriptError, OSError):
        return None
    return data if len(data) <= limit else None


def bounded_lines(handle: BinaryIO) -> Iterator[bytes | int]:
    """Each line of ``handle``; a line over ``MAX_LINE_BYTES`` is read past in pieces and
    given as its length (an int) instead."""
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        size = len(raw)
        while piece := handle.readline(MAX_LINE_BYTES):
            size += len(piece)
            if piece.endswith(b"\n"):
                break
        yield size


def read_raw_lines(
    path: Path, diagnostics: Diagnostics, progress: Progress | None = None
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, bytes)`` for each non-blank line; report over-long ones.

    Raises:
        TranscriptError: the file cannot be opened or read, or is not a regular file.
    """
    with open_regular(path) as handle:
        lineno = 0
        try:
            for raw in bounded_lines(handle):
                lineno += 1
                if isinstance(raw, int):
                    if progress is not None:
                        progress.advance(raw)
                    diagnostics.skip(path, lineno, f"line longer than {MAX_LINE_BYTES} bytes "
                                     f"({raw} bytes): not read")  # fmt: skip
                    continue
                if progress is not None:
                    progress.advance(len(raw))
                if raw.strip():
                    yield lineno, raw
        except OSError as exc:
            raise TranscriptError(path, f"read failed after line {lineno}: {exc}") from None


def read_json_lines(
    path: Path, diagnostics: Diagnostics, progress: Progress | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each valid line; report the others.

    Raises:
        TranscriptError: the file cannot be opened or read.
    """
    for lineno, raw in read_raw_lines(path, diagnostics, progress):
        value, error = parse_line(raw)
        if error is not None:
            diagnostics.skip(path, lineno, error)
        elif value is not None:
            yield lineno, value
