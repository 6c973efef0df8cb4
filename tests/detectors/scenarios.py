"""Scripted conversations of the incidents in docs/concepts.md, replayed through the analyzer."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer, ConversationRegistry
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    PhaseReport,
    TurnAnalysis,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource

WINDOW = 200_000

# The boundary incident: hypothesize 0.81 at turn 28, straddling hypothesize/patch at 30,
# patch 0.63 at 31, patch settled at 0.88 by 34. Reports "at turn n" are made
# before the call of turn n (and before a compaction seen by that call).
NOTE_000_REPORTS: dict[int, PhaseReport] = {
    28: PhaseReport("hypothesize", confidence=0.81),
    30: PhaseReport(
        "hypothesize",
        distribution={"hypothesize": 0.48, "patch": 0.44, "explore": 0.05, "verify": 0.03},
    ),
    31: PhaseReport("patch", confidence=0.63),
    34: PhaseReport("patch", confidence=0.88),
}


def _note_000_tools(turn: int) -> tuple[str, ...]:
    if turn < 20:
        return ("read_file", "grep")
    if turn < 30:
        return ("read_file", "run_tests")
    return ("edit_file",)


def note_000_run(
    compaction_turn: int, mode: CompactionMode = CompactionMode.LOSSY
) -> tuple[ConversationAnalyzer, CompactionAnalysis]:
    """The boundary incident's 40-turn run with one compaction seen by ``compaction_turn``."""
    analyzer, analysis = note_000_replay(compaction_turn, mode)
    assert analysis is not None
    return analyzer, analysis


def note_000_replay(
    compaction_turn: int | None,
    mode: CompactionMode = CompactionMode.LOSSY,
    stop_before: int = 41,
) -> tuple[ConversationAnalyzer, CompactionAnalysis | None]:
    """Replay the boundary incident's run up to the moment before the call of turn ``stop_before``.

    The context grows by 4,900 tokens a turn: 71% of the window after turn 29.
    Reports due at ``stop_before`` are made; its compaction and call are not.
    """
    analyzer = ConversationAnalyzer("note-000", Settings())
    analysis: CompactionAnalysis | None = None
    context = 0
    for turn in range(1, 41):
        if turn in NOTE_000_REPORTS:
            analyzer.report_phase(NOTE_000_REPORTS[turn])
        if turn == stop_before:
            break
        if turn == compaction_turn:
            after = 40_000
            analysis = analyzer.observe_compaction(
                CompactionObservation(
                    source=CompactionSource.EXPLICIT,
                    mode=mode,
                    tokens_before=context,
                    tokens_after=after,
                )
            )
            context = after
        context += 4_900
        analyzer.observe_turn(
            TurnObservation(
                context_tokens=context,
                model="claude-sonnet-4-5",
                window=WINDOW,
                new_content_tokens=1_500,
                tool_output_tokens=(1_500,),
                tool_calls=_note_000_tools(turn),
            )
        )
    return analyzer, analysis


# The livelock incident: 11 compactions, about 9 turns apart at first and about 3 at the end.
NOTE_004_INTERVALS = (9, 9, 9, 9, 7, 5, 3, 3, 3, 3)
# The same workload after the fix: stable intervals.
NOTE_004_RESET_INTERVALS = (11, 10, 12, 9)


NOTE_004_TRIGGER = 170_000
"""The livelock incident's trigger: 85% of a 200k budget."""


def note_004_run(
    intervals: Sequence[int],
    *,
    content_per_turn: Sequence[int] | int = 600,
    first_turn: int = 10,
    reset: bool = False,
    registry: ConversationRegistry | None = None,
) -> tuple[ConversationAnalyzer, list[CompactionAnalysis]]:
    """A run with compactions spaced by ``intervals`` under the given new content per turn.

    As in the livelock incident, every compaction fires at the trigger (85% of 200k) and leaves the
    context just low enough that the turns to the next one refill it: each turn adds its
    new content plus an 800-token re-expansion residual. ``content_per_turn`` is one value
    for every turn or one per cycle (the first cycle, before the first compaction, uses the
    first value); ``reset`` marks every compaction as re-summarized from raw turns (a fresh
    lineage).
    """
    if registry is None:
        registry = ConversationRegistry(Settings())
    analyzer = registry.get("note-004")
    turns = [first_turn, *(first_turn + t for t in accumulate(intervals))]
    per_cycle = _per_cycle(content_per_turn, len(turns) + 1)
    gaps = [*intervals, 3]  # the turns each compaction leaves room for (3 after the last)
    analyses: list[CompactionAnalysis] = []
    cycle = 0
    context = NOTE_004_TRIGGER - (first_turn - 1) * (per_cycle[0] + 800)
    for turn in range(1, turns[-1] + 1):
        if turn in turns:
            after = NOTE_004_TRIGGER - gaps[cycle] * (per_cycle[cycle + 1] + 800)
            analyses.append(
                analyzer.observe_compaction(
                    CompactionObservation(
                        source=CompactionSource.IMPORT,
                        tokens_before=context,
                        tokens_after=after,
                        continues_lineage=False if reset else None,
                    )
                )
            )
            context, cycle = after, cycle + 1
        content = per_cycle[min(cycle, len(per_cycle) - 1)]
        if turn > 1:
            context += content + 800  # new content plus the re-expansion residual
        turn_analysis = analyzer.observe_turn(
            TurnObservation(
                context_tokens=context, window=WINDOW, new_content_tokens=content, tool_calls=()
            )
        )
        settle(analyses, turn_analysis)
    return analyzer, analyses


def settle(analyses: list[CompactionAnalysis], turn: TurnAnalysis) -> None:
    """Complete the last compaction with what the turn that settled it found."""
    if turn.settled is not None and analyses:
        analyses[-1] = analyses[-1].merged(turn.settled)


def _per_cycle(value: Sequence[int] | int, n: int) -> list[int]:
    if isinstance(value, int):
        return [value] * n
    return list(value)
