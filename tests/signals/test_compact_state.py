"""The compact per-conversation state: float tables equal the numpy maths, small trackers."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import PhaseReport
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals import PhaseTracker, PressureTracker, attention_decay
from otel_compaction.signals.phase_model import (
    entropy_of_distribution,
    filter_step,
    filter_tables,
    flip_probability,
    normalize,
    normalize_floats,
    turn_likelihood,
)
from otel_compaction.signals.tools import CATEGORIES, ToolCategory

PHASE_LISTS = st.sampled_from(
    [
        ("explore", "hypothesize", "patch", "verify"),
        ("work",),
        ("plan", "implement", "test"),
        ("a", "b", "c", "d", "e", "f"),
    ]
)
WEIGHTS = st.lists(st.floats(min_value=0.0, max_value=1e6), min_size=6, max_size=6)
EVIDENCE = st.lists(st.sampled_from(CATEGORIES), max_size=4)
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=200)
@given(PHASE_LISTS, st.floats(min_value=0.01, max_value=0.99), WEIGHTS, EVIDENCE)
def test_filter_tables_match_the_numpy_functions(
    phases: tuple[str, ...], stickiness: float, weights: list[float], evidence: list[ToolCategory]
) -> None:
    """One filter step, its likelihood and its estimate's phase, entropy and flip equal numpy's."""
    tables = filter_tables(phases, stickiness)
    belief = normalize(weights[: len(phases)])
    likelihood = turn_likelihood(tables.emissions, evidence)
    assert np.allclose(tables.likelihood(evidence), likelihood, rtol=0, atol=1e-12)
    expected = filter_step(belief, tables.transitions, likelihood)
    got = tables.step(tuple(belief.tolist()), tables.likelihood(evidence))
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    estimate, q = tables.estimate(got, PhaseSource.INFERRED), np.array(got)
    assert estimate.name == phases[int(np.argmax(q))]
    assert math.isclose(estimate.entropy, entropy_of_distribution(q), abs_tol=1e-12)
    assert math.isclose(
        estimate.transition_likelihood, flip_probability(q, tables.transitions), abs_tol=1e-12
    )


@given(st.lists(ANY_FLOAT, max_size=7))
def test_normalize_floats_matches_normalize(weights: list[float]) -> None:
    """The float normaliser drops bad weights and sums to one exactly like the numpy one."""
    assert np.allclose(normalize_floats(weights), normalize(weights), rtol=0, atol=1e-15)


def test_tracker_current_is_rebuilt_equal_to_the_returned_estimate() -> None:
    """current equals what the last turn or report returned, though it is not stored."""
    tracker = PhaseTracker(Settings())
    turn = tracker.observe_turn(["edit"])
    assert tracker.current == turn
    reported = tracker.report(PhaseReport("verify", confidence=0.7))
    assert tracker.current == reported
    assert tracker.observe_turn(["read_file"]) == reported


def test_pressure_tracker_last_survives_a_clear() -> None:
    """last is the pressure of the last turn as observed, even after clear() drops the outputs."""
    tracker = PressureTracker(Settings())
    before = tracker.last
    assert before is None
    observed = tracker.observe(50_000, 100_000, (10_000,))
    tracker.clear()
    assert tracker.last == observed
    assert tracker.recent_tool_outputs == ()
    assert tracker.observe(50_000, 100_000).attention_decay == 0.0


def test_pressure_tracker_keeps_sizes_that_do_not_fit_64_bits() -> None:
    """Huge or negative sizes are remembered as given, never raised on, and keep the maths."""
    tracker = PressureTracker(Settings(attention_window=3, attention_decay=0.5))
    sizes = (1, -5, 7, 2**70)
    pressure = tracker.observe(1, 10**30, sizes)
    assert tracker.recent_tool_outputs == sizes[1:]
    assert pressure.attention_decay == attention_decay(sizes, 10**30, 3, 0.5)
    for size in (1, 2, 3):
        tracker.observe(1, 100, (size,))
    assert tracker.recent_tool_outputs == (1, 2, 3)
