"""Ignorance is not imminence: an unknown phase; a transition likelihood that needs a held phase."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import PhaseReport
from otel_compaction.signals.phase import PhaseTracker
from otel_compaction.signals.tools import ToolCategory

CATEGORIES = list(ToolCategory)
TURN = st.lists(st.sampled_from(CATEGORIES), min_size=0, max_size=4).map(tuple)
TAU = Settings().transition_veto


@given(st.lists(TURN, min_size=1, max_size=40), st.integers(min_value=0, max_value=6))
def test_phase_is_unknown_until_the_evidence_minimum(
    turns: list[tuple[ToolCategory, ...]], minimum: int
) -> None:
    """Until ``phase_min_evidence_turns`` turns with tool calls, every estimate is unknown,
    carries no transition likelihood and reports no transition; from then on it is known."""
    tracker = PhaseTracker(Settings(phase_min_evidence_turns=minimum))
    evidence = 0
    for turn in turns:
        evidence += bool(turn)
        estimate = tracker.observe_categories(turn)
        if evidence < minimum:
            assert not estimate.known
            assert estimate.transition_likelihood == 0.0
            assert tracker.last_transition is None
        else:
            assert estimate.known


@given(TURN, st.integers(min_value=1, max_value=60))
@settings(max_examples=300)
def test_a_constant_tool_pattern_never_raises_the_likelihood_above_tau(
    turn: tuple[ToolCategory, ...], length: int
) -> None:
    """The same tool calls turn after turn are no evidence of change: the transition
    likelihood stays at or below tau however long the run."""
    tracker = PhaseTracker(Settings())
    for _ in range(length):
        estimate = tracker.observe_categories(turn)
        assert estimate.transition_likelihood <= TAU


@given(st.lists(TURN, min_size=1, max_size=60))
@settings(max_examples=300)
def test_a_likelihood_above_tau_needs_a_phase_held_before(
    turns: list[tuple[ToolCategory, ...]],
) -> None:
    """Whenever the likelihood exceeds tau, some phase was held with confidence within the
    last ``phase_hold_turns`` turns, and the estimate names it."""
    s = Settings()
    tracker = PhaseTracker(s)
    last_held: int | None = None
    for index, turn in enumerate(turns, start=1):
        estimate = tracker.observe_categories(turn)
        if estimate.known and estimate.confidence >= s.phase_hold_confidence:
            last_held = index
        if estimate.transition_likelihood > TAU:
            assert last_held is not None
            assert index - last_held <= s.phase_hold_turns
            assert estimate.held_phase is not None


def test_a_report_makes_the_phase_known_at_once() -> None:
    """A phase report is evidence enough: the next estimate is known."""
    tracker = PhaseTracker(Settings())
    assert not tracker.current.known
    estimate = tracker.report(PhaseReport("hypothesize", confidence=0.81))
    assert estimate.known
    assert tracker.observe_categories(()).known


def test_a_held_phase_losing_its_probability_raises_the_likelihood() -> None:
    """Edits until patch is held, then test runs: patch loses its probability to verify and
    the likelihood, measured against patch, rises above tau; once verify is held it falls."""
    tracker = PhaseTracker(Settings())
    edit, test = (ToolCategory.EDIT,), (ToolCategory.TEST,)
    editing = [tracker.observe_categories(edit) for _ in range(8)]
    assert editing[-1].name == "patch"
    assert editing[-1].held_phase == "patch"
    assert editing[-1].transition_likelihood <= TAU
    testing = [tracker.observe_categories(test) for _ in range(6)]
    assert testing[0].transition_likelihood > TAU
    assert testing[0].held_phase == "patch"
    assert testing[-1].name == "verify"
    assert testing[-1].held_phase == "verify"
    assert testing[-1].transition_likelihood <= TAU


def test_an_ambiguous_run_that_never_settles_stays_at_the_base_rate() -> None:
    """Turns that mix every kind of tool call never let a phase be held: no evidence of a
    change, so the likelihood is the model's base rate (1 - stickiness)."""
    s = Settings()
    tracker = PhaseTracker(s)
    mixed = (ToolCategory.READ, ToolCategory.EDIT, ToolCategory.TEST, ToolCategory.RUN)
    for _ in range(20):
        estimate = tracker.observe_categories(mixed)
    assert estimate.known
    assert estimate.held_phase is None
    assert abs(estimate.transition_likelihood - (1 - s.phase_stickiness)) < 1e-12
