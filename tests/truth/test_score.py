"""Precision and recall as sets of facts, with don't-care keys and pairwise conversations."""

from __future__ import annotations

from benchmarks.truth.model import CompactionTruth, Observed, ObservedCompaction
from benchmarks.truth.score import Tally, ambiguous_calls, score_run


def _truth(turn: int, mode: str = "lossy", generation: int | None = 0) -> CompactionTruth:
    return CompactionTruth(
        agent="a",
        turn=turn,
        mode=mode,
        kind="rewrite",
        generation=generation,
        style=None,
        failed=False,
        pressure=True,
        trigger_tokens=8_000,
        before_tokens=8_100,
        window=10_000,
        after_tokens=3_000,
    )


def _seen(turn: int, mode: str = "lossy", generation: int | None = 0) -> ObservedCompaction:
    return ObservedCompaction("a", turn, mode, generation, 3_050, f"c{turn}", frozenset())


def test_tally_precision_and_recall() -> None:
    """tp / (tp + fp) and tp / (tp + fn), None where the denominator is empty."""
    assert (Tally(3, 1, 2).precision, Tally(3, 1, 2).recall) == (0.75, 0.6)
    assert (Tally().precision, Tally().recall) == (None, None)


def test_a_missed_and_a_spurious_compaction_count_once_each() -> None:
    """Truth at 5 and 9, seen at 5 and 7: found is 1 tp, 1 fp, 1 fn; a wrong mode costs both."""
    truths = [_truth(5), _truth(9)]
    observed = Observed((_seen(5, mode="extractive"), _seen(7)), ("x",) * 10)
    score = score_run(truths, observed, ["a"] * 10, frozenset())
    found, mode = score.tallies["found"], score.tallies["mode"]
    assert (found.tp, found.fp, found.fn) == (1, 1, 1)
    assert (mode.tp, mode.fp, mode.fn) == (0, 2, 2)
    assert score.tallies["size_after"].tp == 1  # 3,050 is within 5% of 3,000


def test_a_dont_care_truth_is_left_out_of_both_sides() -> None:
    """A prune has no generation truth: whatever generation it is seen with is not scored."""
    truths = [_truth(5, mode="prune", generation=None)]
    score = score_run(truths, Observed((_seen(5, "prune", 3),), ("x",) * 6), ["a"] * 6, frozenset())
    generation = score.tallies["generation"]
    assert (generation.tp, generation.fp, generation.fn) == (0, 0, 0)


def test_a_split_conversation_loses_recall_and_a_merge_loses_precision() -> None:
    """Pairwise: one agent split in two halves, two agents merged into one conversation."""
    split = score_run([], Observed((), ("x", "x", "y", "y")), ["a"] * 4, frozenset())
    assert split.tallies["conversation"].recall == 2 / 6
    merged = score_run([], Observed((), ("x",) * 4), ["a", "b", "a", "b"], frozenset())
    assert merged.tallies["conversation"].precision == 2 / 6


def test_calls_identical_on_the_wire_for_two_agents_are_ambiguous() -> None:
    """Two agents' byte-identical first requests carry no evidence: both are left out."""
    bodies = [{"m": [1]}, {"m": [1]}, {"m": [1, 2]}, {"m": [1, 3]}]
    assert ambiguous_calls(bodies, ["a", "b", "a", "b"]) == frozenset({0, 1})
