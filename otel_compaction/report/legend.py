"""What each finding kind and rule means, in one sentence, and where the docs explain it.

The HTML report prints this legend under its findings table. The explanations
are in ``docs/concepts.md`` (the reasons) and ``docs/detectors.md`` (the exact
rules) of the repository; when the package runs from a checkout that has them,
the legend links to them, otherwise it names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from otel_compaction.semconv import FindingKind


@dataclass(frozen=True, slots=True)
class LegendEntry:
    """One finding kind and rule: what it means and the section of docs/concepts.md about it."""

    kind: FindingKind
    rule: str
    meaning: str
    section: str
    """The heading in docs/concepts.md (its anchor is GitHub's slug of it)."""

    @property
    def anchor(self) -> str:
        """The section's anchor: lower case, spaces to hyphens, other punctuation dropped."""
        kept = "".join(ch for ch in self.section.lower() if ch.isalnum() or ch in " -_")
        return kept.replace(" ", "-")


_BOUNDARY = "Boundary compaction"
_LIVELOCK = "Re-expansion livelock"
_RUBRIC_SHORT = "Short runs"
_RUBRIC_SCHEMA = "The preserve-schema"
_RUBRIC_LOST = "A summary must never blank the context"
_INEFFECTIVE = "Ineffective compaction"

LEGEND: tuple[LegendEntry, ...] = (
    LegendEntry(FindingKind.BOUNDARY_COMPACTION, "veto",
                "a summarizing compaction under pressure while a phase held with confidence "
                "was giving way: the evidence the next phase needs was summarized away",
                _BOUNDARY),
    LegendEntry(FindingKind.BOUNDARY_COMPACTION, "ceiling",
                "the same above the hard ceiling, where compaction had to happen "
                "but should have kept the evidence (extractive)", _BOUNDARY),
    LegendEntry(FindingKind.REEXPANSION_LIVELOCK, "cadence",
                "the interval between compactions shrank more than 20% three cycles in a "
                "row under flat new content: the summaries re-inflate the context", _LIVELOCK),
    LegendEntry(FindingKind.REEXPANSION_LIVELOCK, "thrashing",
                "three compactions in a row, each within three turns of the previous one "
                "(Claude Code's guard)", _LIVELOCK),
    LegendEntry(FindingKind.REEXPANSION_LIVELOCK, "no_progress",
                "two ineffective compactions in a row: each left the next call at the "
                "trigger (Codex's guard)", _LIVELOCK),
    LegendEntry(FindingKind.SHORT_RUN_COMPACTION, "short_run",
                "a run that ended under 20 turns compacted with room left: the summary "
                "cost more than the history it replaced", _RUBRIC_SHORT),
    LegendEntry(FindingKind.SUMMARY_SCHEMA_COVERAGE, "schema",
                "the summary lacks most fields its template asks for", _RUBRIC_SCHEMA),
    LegendEntry(FindingKind.LOST_TASK, "failed",
                "the summary step failed and the context still shrank, with no summary "
                "in its place", _RUBRIC_LOST),
    LegendEntry(FindingKind.LOST_TASK, "empty_context",
                "the compaction left an empty context", _RUBRIC_LOST),
    LegendEntry(FindingKind.LOST_TASK, "empty_summary",
                "a summarizing compaction produced an empty summary of a non-empty "
                "region", _RUBRIC_LOST),
    LegendEntry(FindingKind.INEFFECTIVE_COMPACTION, "reclaimed",
                "the compaction bought (almost) no turns: the next call was still at the "
                "trigger, typically because the prompt and tools fill the window",
                _INEFFECTIVE),
    LegendEntry(FindingKind.INEFFECTIVE_COMPACTION, "refilled",
                "the agent compacted again after a single call: the compaction bought "
                "fewer than two turns, counted when the next one came", _INEFFECTIVE),
)  # fmt: skip

CONCEPTS_PAGE = "docs/concepts.md"
DETECTORS_PAGE = "docs/detectors.md"


def docs_dir() -> Path | None:
    """The ``docs/`` folder of the source tree this package runs from, if it has one."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    return docs if (docs / "concepts.md").is_file() else None
