"""Reading JSON Lines files: broken lines are reported with file and line, then skipped.

Every reader goes through :func:`read_json_lines`, so every format treats a
malformed line the same way: one :class:`SkippedLine` in the
:class:`Diagnostics`, and the rest of the file is still read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_compaction.transcripts.progress import Progress

MAX_KEPT = 1000
"""Skipped lines kept in detail; past that they are only counted."""

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

    def skip(self, file: str | Path, line: int, error: str) -> None:
        """Record one skipped line."""
        entry = SkippedLine(str(file), line, error[:_MAX_ERROR_CHARS])
        self.skipped_count += 1
        if len(self.skipped) < MAX_KEPT:
            self.skipped.append(entry)
        if self.on_skip is not None:
            self.on_skip(entry)


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
        value = json.loads(text)
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"not a JSON object (a JSON {type(value).__name__})"
    return value, None


def read_raw_lines(path: Path, progress: Progress | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, bytes)`` for each non-blank line.

    Raises:
        TranscriptError: the file cannot be opened or read.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TranscriptError(path, exc.strerror or str(exc)) from None
    with handle:
        lineno = 0
        try:
            for raw in handle:
                lineno += 1
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
    for lineno, raw in read_raw_lines(path, progress):
        value, error = parse_line(raw)
        if error is not None:
            diagnostics.skip(path, lineno, error)
        elif value is not None:
            yield lineno, value
