"""What a run did not analyze, summed up: how every report and every run ends.

A file skipped whole (unreadable, not a known format, empty) or a line skipped (too
long, not JSON, not a request...) was reported as it was found; this is the account
at the end, so that a run that read nothing useful never ends quietly::

    skipped: 1 line in 1 file, 1 file unreadable
      1 line: line longer than 67108864 bytes (first trace.json:1)
      1 line in trace.json
      unreadable notes.txt: not OTLP/JSON traces or logs, ...

and, in the JSON report, ``skipped_summary`` (docs/analyze.md#what-was-skipped).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

EMPTY_ERROR = "empty file: nothing to analyze"


def counted(count: int, noun: str) -> str:
    """``1 line``, ``2 lines``: a count and its noun, plural when it is not one."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


@dataclass(frozen=True, slots=True)
class SkipSummary:
    """Every skip of a run, counted by reason and by file."""

    lines: int
    by_reason: tuple[tuple[str, int], ...]
    by_file: tuple[tuple[str, int], ...]
    first_by_reason: tuple[tuple[str, str], ...] = ()
    """Where each reason was first met, ``FILE:LINE``."""
    unreadable: tuple[tuple[str, str], ...] = ()
    """``(file, why)`` of each file that could not be read at all."""
    empty: tuple[str, ...] = ()
    """The files with nothing in them."""

    @property
    def nothing(self) -> bool:
        """Whether nothing at all was skipped."""
        return not (self.lines or self.unreadable or self.empty)

    def headline(self) -> str:
        """One line: what was skipped, in counts."""
        if self.nothing:
            return "skipped: nothing"
        parts = []
        if self.lines:
            parts.append(f"{counted(self.lines, 'line')} in {counted(len(self.by_file), 'file')}")
        if self.unreadable:
            parts.append(f"{counted(len(self.unreadable), 'file')} unreadable")
        if self.empty:
            parts.append(f"{counted(len(self.empty), 'file')} empty")
        return "skipped: " + ", ".join(parts)

    def details(self) -> Iterator[str]:
        """The counts behind the headline: by reason, by file, then the files skipped whole."""
        first = dict(self.first_by_reason)
        for reason, n in self.by_reason:
            where = f" (first {first[reason]})" if reason in first else ""
            yield f"{counted(n, 'line')}: {reason}{where}"
        yield from (f"{counted(n, 'line')} in {file}" for file, n in self.by_file)
        yield from (f"unreadable {path}: {why}" for path, why in self.unreadable)
        yield from (f"empty {path}: nothing to analyze" for path in self.empty)

    def to_json(self) -> dict[str, object]:
        """The report's ``skipped_summary``."""
        return {
            "lines": self.lines,
            "by_reason": dict(self.by_reason),
            "first_by_reason": dict(self.first_by_reason),
            "by_file": dict(self.by_file),
            "files_unreadable": [{"file": path, "error": why} for path, why in self.unreadable],
            "files_empty": list(self.empty),
        }


def summarize(
    lines: int,
    by_reason: dict[str, int],
    by_file: dict[str, int],
    first_by_reason: dict[str, str],
    unreadable: tuple[tuple[str, str], ...] = (),
    empty: tuple[str, ...] = (),
) -> SkipSummary:
    """The summary of a run's skips (reasons most frequent first, files in reading order)."""
    reasons = tuple(sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0])))
    first = tuple((reason, first_by_reason[reason]) for reason, _ in reasons
                  if reason in first_by_reason)  # fmt: skip
    return SkipSummary(lines, reasons, tuple(by_file.items()), first, unreadable, empty)
