"""A report of one conversation with one flagged compaction: the boundary incident at turn 30."""

from __future__ import annotations

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    TurnAnalysis,
    TurnObservation,
)
from otel_compaction.report.model import ConversationReport, FindingsReport
from otel_compaction.semconv import CompactionMode, CompactionSource
from tests.detectors.scenarios import NOTE_000_REPORTS, WINDOW

COMPACTION_ID = "1d631c941cab4798ba7d1bfa651369b7"


def one_compaction_report() -> FindingsReport:
    """40 turns, one lossy compaction seen by turn 30 while the phase straddles: flagged."""
    analyzer = ConversationAnalyzer("note-000", Settings())
    turns: list[TurnAnalysis] = []
    compactions: list[CompactionAnalysis] = []
    context = 0
    for turn in range(1, 41):
        if turn in NOTE_000_REPORTS:
            analyzer.report_phase(NOTE_000_REPORTS[turn])
        if turn == 30:
            observation = CompactionObservation(
                source=CompactionSource.EXPLICIT, mode=CompactionMode.LOSSY,
                tokens_before=context, tokens_after=40_000, compaction_id=COMPACTION_ID,
            )  # fmt: skip
            compactions.append(analyzer.observe_compaction(observation))
            context = 40_000
        context += 4_900
        observed = TurnObservation(
            context_tokens=context, model="claude-sonnet-4-5", window=WINDOW,
            new_content_tokens=1_500, tool_output_tokens=(1_500,), tool_calls=("read_file",),
        )  # fmt: skip
        turns.append(analyzer.observe_turn(observed))
    conversation = ConversationReport(
        "note-000", tuple(turns), tuple(compactions), agent="debugger"
    )
    return FindingsReport(conversations=(conversation,))
