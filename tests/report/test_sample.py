"""A conversation's turns in the report: exact counts, a bounded sample for the charts."""

from __future__ import annotations

import itertools

from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import TurnAnalysis, TurnObservation
from otel_compaction.report.sample import MAX_SAMPLED, TurnSample


def _turns(count: int) -> list[TurnAnalysis]:
    analyzer = ConversationAnalyzer("sampled")
    return [
        analyzer.observe_turn(TurnObservation(context_tokens=1_000 + (i * 37) % 90_000))
        for i in range(count)
    ]


def test_a_short_conversation_keeps_every_turn() -> None:
    """Up to the limit, every turn is kept in order."""
    sample = TurnSample()
    turns = _turns(300)
    for turn in turns:
        sample.add(turn)
    assert sample.turns() == tuple(turns)


def test_a_long_conversation_keeps_a_bounded_even_sample_and_exact_figures() -> None:
    """Past the limit the sample stays bounded and evenly spaced; the count, the last index
    and the peak fraction are those of every turn, and the turns either side of a
    compaction are kept."""
    sample = TurnSample()
    turns = _turns(5 * MAX_SAMPLED + 3)
    at = 3 * MAX_SAMPLED + 5  # a compaction between two turns off the stride
    for i, turn in enumerate(turns):
        if i == at:
            sample.mark_compaction()
        sample.add(turn)
    kept = sample.turns()
    assert len(kept) <= MAX_SAMPLED + 2
    assert (sample.count, sample.last_index) == (len(turns), turns[-1].turn_index)
    assert sample.peak == max(t.pressure.token_fraction for t in turns)
    indexes = [t.turn_index for t in kept]
    assert indexes == sorted(indexes)
    assert {turns[at - 1].turn_index, turns[at].turn_index} <= set(indexes)
    gaps = {b - a for a, b in itertools.pairwise(indexes)}
    assert max(gaps) <= 8
