"""The compact per-conversation state: the filter equals its plain-float oracle, small trackers."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import PhaseReport
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals import PhaseTracker, PressureTracker, attention_decay
from otel_compaction.signals.phase_model import filter_tables, normalize
from otel_compaction.signals.tools import CATEGORIES, ToolCategory
from tests.signals import filter_oracle as oracle

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
def test_the_filter_equals_the_plain_float_oracle(
    phases: tuple[str, ...], stickiness: float, weights: list[float], evidence: list[ToolCategory]
) -> None:
    """One filter step, its likelihood and its estimate's phase, entropy and flip equal the
    plain-float oracle's to rounding."""
    tables = filter_tables(phases, stickiness)
    belief = oracle.normalize(weights[: len(phases)])
    expected_likelihood = oracle.likelihood(tables, evidence)
    assert np.allclose(tables.likelihood(evidence), expected_likelihood, rtol=0, atol=1e-12)
    got = tables.step(belief, tables.likelihood(evidence))
    expected = oracle.step(tables, belief, expected_likelihood)
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    estimate, reference = (
        tables.estimate(got, PhaseSource.INFERRED),
        oracle.estimate(tables, expected, PhaseSource.INFERRED),
    )
    if oracle.clear_top(expected):
        assert estimate.name == reference.name
    assert math.isclose(estimate.entropy, reference.entropy, abs_tol=1e-12)
    assert math.isclose(
        estimate.transition_likelihood, reference.transition_likelihood, abs_tol=1e-12
    )


@given(st.lists(ANY_FLOAT, max_size=7))
def test_normalize_equals_the_oracle(weights: list[float]) -> None:
    """The normaliser drops bad weights and sums to one as the plain-float oracle does."""
    assert np.allclose(normalize(weights), oracle.normalize(weights), rtol=0, atol=1e-15)


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
