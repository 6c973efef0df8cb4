"""Re-expansion livelock (the livelock incident) and the vendors' thrashing and no-progress."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.detectors import cadence_verdict, no_progress, reexpansion_livelock
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import CompactionObservation, CompactionRecord, TurnObservation
from otel_compaction.policy import CompactionReexpansionError, check_compaction_health
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind
from tests.detectors.records import context_of, run_of
from tests.detectors.scenarios import NOTE_004_INTERVALS, NOTE_004_RESET_INTERVALS, note_004_run


def _rule(intervals: list[int], **kw: object) -> str | None:
    finding = reexpansion_livelock(context_of(run_of(intervals, **kw)))  # type: ignore[arg-type]
    return finding.rule if finding is not None else None


def test_note_004_accelerating_run_is_flagged_where_the_rule_first_holds() -> None:
    """The livelock incident's run (~9 then ~3 turns apart, flat load) is flagged where its
    reference code first raises."""
    analyzer, analyses = note_004_run(NOTE_004_INTERVALS)
    assert len(analyses) == 11
    flagged = [a for a in analyses if a.flagged(FindingKind.REEXPANSION_LIVELOCK)]
    assert flagged
    first = flagged[0].findings[0]
    assert first.rule == "cadence"
    assert "[9, 7, 5, 3]" in first.reason
    assert "reset the compaction lineage" in first.reason
    cycles = [a.record.cycle for a in analyses if a.record.cycle is not None]
    first_raise = None
    for n in range(1, len(cycles) + 1):
        window = cycles[max(0, n - 4) : n]
        try:
            check_compaction_health(
                [c.interval_turns for c in cycles[:n]],
                [round(c.new_content_per_turn) for c in window],
            )
        except CompactionReexpansionError:
            first_raise = n
            break
    assert first_raise is not None
    assert flagged[0].record.turn_index == analyses[first_raise].record.turn_index == 61
    assert analyzer.livelocked


def test_note_004_late_compactions_are_flagged_as_thrashing() -> None:
    """Once the cadence sits at ~3 turns, Claude Code's thrashing rule keeps flagging."""
    _, analyses = note_004_run(NOTE_004_INTERVALS)
    rules = [
        f.rule for a in analyses for f in a.findings if f.kind is FindingKind.REEXPANSION_LIVELOCK
    ]
    assert rules == ["cadence", "thrashing", "thrashing"]


def test_note_004_reset_run_is_not_flagged() -> None:
    """After the fix (intervals 11, 10, 12, 9, fresh lineages, flat load) nothing is flagged."""
    analyzer, analyses = note_004_run(NOTE_004_RESET_INTERVALS, reset=True)
    assert not any(a.flagged(FindingKind.REEXPANSION_LIVELOCK) for a in analyses)
    assert [a.record.generation for a in analyses] == [0] * 5
    assert not analyzer.livelocked


def test_note_004_chained_lineage_deepens_each_cycle() -> None:
    """Without lineage reset, each compaction summarises the previous summary: generations grow."""
    _, analyses = note_004_run(NOTE_004_INTERVALS)
    assert [a.record.generation for a in analyses] == list(range(11))


def test_shrink_of_exactly_twenty_percent_does_not_count() -> None:
    """A shrink of exactly 20% is not "more than 20%": no finding."""
    assert _rule([25, 20, 16, 12]) is None  # 20%, 20%, 25%
    assert _rule([10, 8, 5, 3]) is None  # 20%, 37.5%, 40%
    assert _rule([10, 7, 5, 3]) == "cadence"


def test_three_intervals_never_fire() -> None:
    """Fewer than four intervals is too little history, however fast the cadence."""
    assert _rule([20, 9, 4]) is None
    assert cadence_verdict([20, 9, 4], [600.0] * 3) is None


def test_load_that_is_not_flat_does_not_fire() -> None:
    """Accelerating cadence under growing task content is genuine growth, not livelock."""
    assert _rule([10, 7, 5, 3], per_turn=[600.0, 600.0, 900.0, 600.0]) is None
    assert _rule([10, 7, 5, 3], per_turn=[600.0, 640.0, 620.0, 660.0]) == "cadence"


def test_thrashing_three_in_a_row_within_three_turns() -> None:
    """Claude Code's guard: three compactions in a row each within three turns of the previous."""
    assert _rule([12, 3, 3, 3], per_turn=[100.0, 900.0, 300.0, 600.0]) == "thrashing"
    assert _rule([12, 12, 3, 3]) is None
    assert _rule([12, 2, 4, 1]) is None


def test_thrashing_reason_names_the_intervals() -> None:
    """The thrashing reason carries the intervals and the remedy."""
    finding = reexpansion_livelock(context_of(run_of([12, 1, 2, 3])))
    assert finding is not None
    assert "3 compactions in a row each within 3 turns" in finding.reason
    assert "[1, 2, 3]" in finding.reason
    assert "pin task constraints outside the compacted region" in finding.reason


def _sized(
    records: Sequence[CompactionRecord], before: int = 170_000, fraction: float | None = 0.85
) -> tuple[CompactionRecord, ...]:
    return tuple(
        dataclasses.replace(r, tokens_before=before, token_fraction=fraction) for r in records
    )


def test_no_progress_two_ineffective_compactions_in_a_row() -> None:
    """Codex's guard on the size after: two compactions in a row whose next call is still at
    the trigger are a no-progress livelock, named with the sizes of those next calls."""
    high = [60_000, 172_000, 175_000]
    ctx = context_of(_sized(run_of([10, 11], tokens_after=high)), floor_tokens=168_000)
    finding = no_progress(ctx)
    assert finding is not None
    assert finding.rule == "no_progress"
    assert "[172,000, 175,000] tokens" in finding.reason
    assert "shrink the tool set or the system prompt" in finding.reason


@pytest.mark.parametrize(
    "afters",
    [
        [60_000, 172_000, 60_000],  # the last one reclaimed: no run
        [60_000, 172_000, None],  # the last one's size after is unknown
        [172_000],  # only one compaction
    ],
)
def test_no_progress_needs_ineffective_compactions_in_a_row(afters: list[int | None]) -> None:
    """An effective compaction, one of unknown size after, or too few: no finding."""
    records = _sized(run_of([10] * (len(afters) - 1), tokens_after=afters))
    assert no_progress(context_of(records)) is None


def test_settings_change_the_rule() -> None:
    """The thresholds come from Settings (here a looser shrink threshold)."""
    records = run_of([10, 8, 6, 4])  # 20%, 25%, 33%
    assert reexpansion_livelock(context_of(records)) is None
    loose = Settings(livelock_shrink_threshold=0.15)
    finding = reexpansion_livelock(context_of(records, loose))
    assert finding is not None
    assert finding.rule == "cadence"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=50), min_size=0, max_size=12),
    st.lists(st.floats(min_value=0, max_value=1e5), min_size=0, max_size=12),
)
def test_non_shrinking_intervals_never_livelock(steps: list[int], loads: list[float]) -> None:
    """Property: an interval sequence that never shrinks never yields the cadence rule."""
    intervals = list(itertools.accumulate(steps, initial=1))
    verdict = cadence_verdict(intervals, loads)
    assert verdict is None or not verdict.livelock
    check_compaction_health(intervals, [round(x) for x in loads])
    if len(intervals) > 1:
        per_turn = [max(1.0, x) for x in loads[: len(intervals) - 1]] or [600.0]
        per_turn += [per_turn[-1]] * (len(intervals) - 1 - len(per_turn))
        records = run_of([i + 4 for i in intervals[1:]], per_turn=per_turn)
        assert reexpansion_livelock(context_of(records)) is None


def test_no_progress_compares_with_the_observed_trigger() -> None:
    """The livelock incident's shape (fires at 0.85, leaves 0.78 but reclaims little) is
    judged by share: reclaiming 5% is no progress; leaving 0.30 of the window is progress."""
    little = _sized(run_of([10, 11], tokens_after=[156_000] * 3), before=164_000)
    assert no_progress(context_of(little)) is not None
    plenty = _sized(run_of([10, 11], tokens_after=[60_000] * 3), before=164_000)
    assert no_progress(context_of(plenty)) is None


def test_prune_compactions_are_not_thrashing() -> None:
    """Tool-output clearing every turn (micro-compaction) never makes a livelock finding."""
    prunes = tuple(
        dataclasses.replace(r, mode=CompactionMode.PRUNE, tokens_after=150_000)
        for r in run_of([1, 1, 1, 1, 1])
    )
    assert reexpansion_livelock(context_of(prunes)) is None


def test_prunes_inside_a_cycle_do_not_shorten_it() -> None:
    """A prune between two summaries neither ends nor starts a summarize cycle."""
    analyzer = ConversationRegistry(Settings()).get("c")
    for turn in range(1, 31):
        if turn in (10, 25):
            analyzer.observe_compaction(CompactionObservation(source=CompactionSource.IMPORT))
        if turn == 18:
            analyzer.observe_compaction(
                CompactionObservation(source=CompactionSource.IMPORT, mode=CompactionMode.PRUNE)
            )
        analyzer.observe_turn(TurnObservation(context_tokens=50_000, new_content_tokens=500))
    _first, prune, second = analyzer.compactions
    assert prune.cycle is None
    assert second.cycle is not None
    assert second.cycle.interval_turns == 15
