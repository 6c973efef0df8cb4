"""The findings report: what ``analyze`` found, ready to print as text, JSON or HTML.

The JSON form is the machine-readable report of docs/analyze.md#the-report::

    {"conversations": [{"id", "turns", "compactions", "max_generation"}],
     "findings": [{"kind", "conversation_id", "compaction_id", "turn", "reason", "rule"}],
     "skipped": [{"file", "line", "error"}]}

``turn`` of a finding is the turn index at which the compaction happened;
``skipped`` lists what was not analyzed: whole files first (``line`` null: a file
that could not be read, or an empty one), then the input lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_compaction.model import CompactionAnalysis, Finding, TurnAnalysis
from otel_compaction.transcripts.lines import SkippedLine


def compaction_token_fraction(analysis: CompactionAnalysis) -> float | None:
    """The one token fraction of a compaction, the one its findings quote: tokens before the
    compaction / window, else the last turn's before it; None when neither is known."""
    if analysis.record.token_fraction is not None:
        return analysis.record.token_fraction
    return analysis.pressure.token_fraction if analysis.pressure is not None else None


@dataclass(frozen=True, slots=True)
class ConversationReport:
    """One conversation: every turn and compaction the engine analyzed, and the findings."""

    conversation_id: str
    turns: tuple[TurnAnalysis, ...]
    compactions: tuple[CompactionAnalysis, ...]
    agent: str | None = None
    source: str | None = None

    @property
    def turn_count(self) -> int:
        """Turns observed (the last turn's index)."""
        return max((t.turn_index for t in self.turns), default=0)

    @property
    def max_generation(self) -> int:
        """The deepest lineage generation reached (0: no summary was summarized again)."""
        return max((c.record.generation for c in self.compactions), default=0)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding, in compaction order."""
        return tuple(f for c in self.compactions for f in c.findings)

    @property
    def peak_token_fraction(self) -> float | None:
        """The highest token fraction of any turn or compaction, None without either."""
        fractions = [t.pressure.token_fraction for t in self.turns]
        fractions += [
            f for c in self.compactions if (f := compaction_token_fraction(c)) is not None
        ]
        return max(fractions, default=None)

    def to_json(self) -> dict[str, object]:
        """The conversation's entry in the JSON report."""
        return {
            "id": self.conversation_id,
            "turns": self.turn_count,
            "compactions": len(self.compactions),
            "max_generation": self.max_generation,
        }


EMPTY_FORMAT = "empty"
"""``FileReport.format`` of a file with nothing in it (``transcripts.Format.EMPTY``)."""
EMPTY_ERROR = "empty file: nothing to analyze"


@dataclass(frozen=True, slots=True)
class FileReport:
    """One input file: its format, and the error if it could not be read at all."""

    path: str
    format: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FindingsReport:
    """Everything ``analyze`` found in its inputs."""

    conversations: tuple[ConversationReport, ...]
    files: tuple[FileReport, ...] = ()
    skipped: tuple[SkippedLine, ...] = ()
    skipped_count: int = 0

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding, conversation by conversation."""
        return tuple(f for c in self.conversations for f in c.findings)

    @property
    def unreadable(self) -> tuple[FileReport, ...]:
        """The files that could not be read at all."""
        return tuple(f for f in self.files if f.error is not None)

    @property
    def empty(self) -> tuple[FileReport, ...]:
        """The files that hold nothing (no non-blank line)."""
        return tuple(f for f in self.files if f.error is None and f.format == EMPTY_FORMAT)

    def to_json(self) -> dict[str, object]:
        """The findings report, with what was skipped: whole files, then lines."""
        files: list[dict[str, object]] = [
            {"file": f.path, "line": None, "error": f.error} for f in self.unreadable
        ]
        files += [{"file": f.path, "line": None, "error": EMPTY_ERROR} for f in self.empty]
        return {
            "conversations": [c.to_json() for c in self.conversations],
            "findings": [f.to_json() for f in self.findings],
            "skipped": files + [s.to_json() for s in self.skipped],
        }
