"""Ineffective compaction: the trigger an agent declares, the turns counted, the fixed part."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_compaction.config import Settings
from otel_compaction.detectors import DEFAULT_DETECTORS, INEFFECTIVE_DETECTOR, Detector
from otel_compaction.detectors.ineffective import refilled, trigger_fraction
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    Finding,
    SummarizerCost,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind
from tests.detectors.records import record

WINDOW = 200_000
FIXED = 24_689


def _analyzer(detectors: Sequence[Detector] = DEFAULT_DETECTORS) -> ConversationAnalyzer:
    return ConversationAnalyzer("conv", Settings(), detectors=detectors)


def _turn(analyzer: ConversationAnalyzer, tokens: int, cached: int | None = None) -> Finding | None:
    analysis = analyzer.observe_turn(
        TurnObservation(context_tokens=tokens, window=WINDOW, cache_read_tokens=cached)
    )
    settled = analysis.settled
    if settled is None:
        return None
    kinds = [f for f in settled.findings if f.kind is FindingKind.INEFFECTIVE_COMPACTION]
    return kinds[0] if kinds else None


def _compact(analyzer: ConversationAnalyzer, before: int, **fields: Any) -> CompactionAnalysis:
    obs = CompactionObservation(
        source=CompactionSource.IMPORT, trigger="auto", tokens_before=before, **fields
    )
    return analyzer.observe_compaction(obs)


def test_the_trigger_is_the_smallest_size_an_agent_compacted_at_on_its_own() -> None:
    """Automatic compactions were at or above the threshold: the smallest bounds it; without
    any, the median of the summarizing ones, which one early manual compaction cannot move."""
    s = Settings()
    auto = [record(10, token_fraction=0.90), record(20, token_fraction=0.80, failed=True)]
    assert trigger_fraction(auto, s) == 0.80
    manual = [
        record(t, trigger="manual", token_fraction=f) for t, f in ((5, 0.2), (9, 0.8), (14, 0.85))
    ]
    assert trigger_fraction(manual, s) == 0.8


def test_refilled_counts_the_calls_a_compaction_bought() -> None:
    """One call before the next compaction is fewer than two turns; a prune, a failure, an
    unsettled record or two calls count nothing."""
    s = Settings()
    settled = record(3, tokens_before=35_000, tokens_after=32_000)
    assert refilled(settled, record(4), s) == 1
    assert refilled(settled, record(5), s) == 0
    assert refilled(settled, record(4, mode=CompactionMode.PRUNE), s) == 0
    assert refilled(record(3, tokens_before=35_000, tokens_after=None), record(4), s) == 0
    assert (
        refilled(record(3, tokens_before=35_000, tokens_after=32_000, failed=True), record(4), s)
        == 0
    )


def test_a_compaction_after_every_call_is_ineffective_in_hindsight() -> None:
    """As in Claude Code's capture: the next compaction came after one call, so the first bought
    one turn: flagged when the second is observed, on the first, naming the measured fixed
    part (the cache read of the call after it) against the trigger."""
    analyzer = _analyzer()
    _turn(analyzer, 33_392)
    _compact(analyzer, 34_181, failed=True, error="too_few_groups")
    kept = analyzer.observe_turn(TurnObservation(34_810, window=WINDOW, cache_read_tokens=33_390))
    assert kept.settled is not None
    assert kept.settled.findings == ()  # the failure kept the context: no lost task
    first = _compact(analyzer, 35_113, tokens_after=3_909)
    assert _turn(analyzer, 32_111, cached=FIXED) is None  # 2,070 under the trigger: not yet
    second = _compact(analyzer, 38_398, tokens_after=8_138)
    hindsight = second.settled
    assert hindsight is not None
    assert hindsight.hindsight
    (finding,) = hindsight.findings
    assert (finding.kind, finding.rule) == (FindingKind.INEFFECTIVE_COMPACTION, "refilled")
    assert finding.compaction_id == first.record.compaction_id
    assert "bought 1 turn" in finding.reason
    assert f"{FIXED:,} tokens) is 0.72 of the 34,181 tokens" in finding.reason
    assert "shrink the tool set or the system prompt" in finding.reason


def test_hindsight_does_not_flag_twice_nor_without_the_rule() -> None:
    """A compaction already flagged ineffective is not flagged again by the next one; an
    analyzer without the ineffective detector judges nothing in hindsight."""
    analyzer = _analyzer()
    _turn(analyzer, 30_000)
    _compact(analyzer, 35_000)
    assert _turn(analyzer, 36_000) is not None  # at or above the trigger: flagged on settlement
    assert _compact(analyzer, 37_000).settled is None
    without = _analyzer(
        detectors=tuple(d for d in DEFAULT_DETECTORS if d is not INEFFECTIVE_DETECTOR)
    )
    _turn(without, 30_000)
    _compact(without, 35_000)
    _turn(without, 31_000)
    assert _compact(without, 38_000).settled is None


def test_the_summarizer_cost_goes_on_the_next_compaction_and_is_no_turn() -> None:
    """observe_summarizer adds to the compaction reported next; a turn first ends its claim."""
    analyzer = _analyzer()
    _turn(analyzer, 30_000)
    analyzer.observe_summarizer(SummarizerCost(1, 36_816, 5_259, 54.1, 0.066))
    analyzer.observe_summarizer(SummarizerCost(1, 100, 10, None, None))
    analysis = _compact(analyzer, 35_000)
    assert analysis.record.summarizer == SummarizerCost(2, 36_916, 5_269, 54.1, 0.066)
    assert analyzer.turn_index == 1
    _turn(analyzer, 20_000)
    analyzer.observe_summarizer(SummarizerCost(1, 1, 1))
    _turn(analyzer, 21_000)
    assert _compact(analyzer, 36_000).record.summarizer is None


def test_the_measured_fixed_part_is_kept_on_the_settled_record() -> None:
    """The cache read of the call that settles a summarizing compaction is its fixed part;
    a failed compaction (the history was kept) measures nothing."""
    analyzer = _analyzer()
    _turn(analyzer, 30_000)
    _compact(analyzer, 34_000, failed=True)
    _turn(analyzer, 34_500, cached=34_000)
    assert analyzer.compactions[-1].fixed_tokens is None
    _compact(analyzer, 35_000)
    _turn(analyzer, 20_000, cached=FIXED)
    assert analyzer.compactions[-1].fixed_tokens == FIXED
