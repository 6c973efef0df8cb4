"""The findings report: what ``analyze`` found, ready to print as text, JSON or HTML.

The JSON form is the machine-readable report of docs/analyze.md#the-report::

    {"conversations": [{"id", "turns", "compactions", "max_generation"}],
     "findings": [{"kind", "conversation_id", "compaction_id", "turn", "reason", "rule"}],
     "skipped": [{"file", "line", "error"}],
     "skipped_summary": {"lines", "by_reason", "first_by_reason", "by_file",
                         "files_unreadable", "files_empty"},
     "continuations": [{"file", "continues", "repeated_records", "new_records"}],
     "compaction_ledger": [{"conversation_id", "compactions": [{"compaction_id", "turn",
                            "tokens_reclaimed", "summarizer_tokens", "rediscovery"}],
                            "tokens_reclaimed", "summarizer_tokens", "tokens_redone",
                            "net", "baseline_tokens"}]}

``turn`` of a finding is the turn index at which the compaction happened;
``skipped`` lists what was not analyzed: whole files first (``line`` null: a file
that could not be read, or an empty one), then the input lines; ``skipped_summary``
counts them all (``report.skips``); ``continuations`` names the files that continue
others, whose repeated records were read once (``transcripts.ledger``);
``compaction_ledger`` is what each conversation's compactions bought and cost
(``report.ledger``).
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_compaction.model import (
    CompactionAnalysis,
    Finding,
    Rediscovery,
    RediscoveryBaseline,
    TurnAnalysis,
)
from otel_compaction.report.ledger import Ledger, ledger
from otel_compaction.report.skips import EMPTY_ERROR, SkipSummary, summarize
from otel_compaction.transcripts.ledger import Continuation
from otel_compaction.transcripts.lines import SkippedLine


def compaction_token_fraction(analysis: CompactionAnalysis) -> float | None:
    """The one token fraction of a compaction, the one its findings quote: tokens before the
    compaction / window, else the last turn's before it; None when neither is known."""
    if analysis.record.token_fraction is not None:
        return analysis.record.token_fraction
    return analysis.pressure.token_fraction if analysis.pressure is not None else None


@dataclass(frozen=True, slots=True)
class ConversationReport:
    """One conversation: its turns and every compaction the engine analyzed, and the findings.

    ``turns`` may be a sample (``report.sample``: a long conversation keeps a bounded
    number for its charts); ``counted_turns`` and ``turn_peak`` are then the exact number
    of turns and the highest token fraction of any of them. Without them, both are
    taken from ``turns``.
    """

    conversation_id: str
    turns: tuple[TurnAnalysis, ...]
    compactions: tuple[CompactionAnalysis, ...]
    agent: str | None = None
    source: str | None = None
    counted_turns: int | None = None
    turn_peak: float | None = None
    rediscovery: tuple[Rediscovery, ...] = ()
    """What each compaction's rediscovery horizon measured (docs/concepts.md#rediscovery)."""
    rediscovery_baseline: RediscoveryBaseline | None = None

    @property
    def ledger(self) -> Ledger:
        """The compaction ledger: reclaimed, summarizer, redone, net (``report.ledger``)."""
        return ledger(
            self.conversation_id, self.compactions, self.rediscovery, self.rediscovery_baseline
        )

    @property
    def turn_count(self) -> int:
        """Turns observed (the last turn's index)."""
        if self.counted_turns is not None:
            return self.counted_turns
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
        if self.turn_peak is not None:
            fractions.append(self.turn_peak)
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
    skipped_by_reason: tuple[tuple[str, int], ...] = ()
    skipped_first: tuple[tuple[str, str], ...] = ()
    """Where each reason of ``skipped_by_reason`` was first met (``FILE:LINE``)."""
    skipped_by_file: tuple[tuple[str, int], ...] = ()
    continuations: tuple[Continuation, ...] = ()
    """Files that continue others (a resumed or forked session, a compaction sub-agent):
    the records they repeat were read once."""

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

    @property
    def skip_summary(self) -> SkipSummary:
        """Every skip counted: lines by reason and by file, files unreadable or empty."""
        return summarize(
            self.skipped_count,
            dict(self.skipped_by_reason),
            dict(self.skipped_by_file),
            dict(self.skipped_first),
            tuple((f.path, f.error or "") for f in self.unreadable),
            tuple(f.path for f in self.empty),
        )

    def to_json(self) -> dict[str, object]:
        """The findings report, with what was skipped: whole files, then lines, then their
        summary; and which files continue which."""
        files: list[dict[str, object]] = [
            {"file": f.path, "line": None, "error": f.error} for f in self.unreadable
        ]
        files += [{"file": f.path, "line": None, "error": EMPTY_ERROR} for f in self.empty]
        return {
            "conversations": [c.to_json() for c in self.conversations],
            "findings": [f.to_json() for f in self.findings],
            "skipped": files + [s.to_json() for s in self.skipped],
            "skipped_summary": self.skip_summary.to_json(),
            "continuations": [c.to_json() for c in self.continuations],
            "compaction_ledger": [c.ledger.to_json() for c in self.conversations if c.compactions],
        }
