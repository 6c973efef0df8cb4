"""Hypothesis properties: every signal stays in range, every distribution is one."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import PhaseEstimate, PhaseReport
from otel_compaction.signals import (
    PhaseTracker,
    PressureTracker,
    attention_decay,
    categorize_tool,
    normalized_entropy,
    token_fraction,
    transition_likelihood,
    transition_matrix,
)
from otel_compaction.signals.tools import ToolCategory

PHASES = ("explore", "hypothesize", "patch", "verify")
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
TOKENS = st.integers(min_value=-(10**7), max_value=10**9)
TOOL_NAMES = st.sampled_from(
    [
        "read_file",
        "Grep",
        "edit",
        "Write",
        "bash",
        "shell",
        "run_tests",
        "TodoWrite",
        "str_replace_based_edit_tool",
        "mcp__x__search",
        "deploy",
    ]
) | st.text(max_size=20)
COMMANDS = st.sampled_from(["pytest -q", "ls", "sed -i s/a/b/ f", "make", "cat > f", "git log"])
ARGUMENTS = st.none() | st.text(max_size=40) | COMMANDS.map(lambda c: json.dumps({"command": c}))
TURN = st.lists(st.tuples(TOOL_NAMES, ARGUMENTS), max_size=5)
REPORT = st.builds(
    PhaseReport,
    name=st.sampled_from([*PHASES, "unknown-phase"]),
    confidence=st.none() | ANY_FLOAT,
    distribution=st.none()
    | st.dictionaries(st.sampled_from([*PHASES, "other"]), ANY_FLOAT, max_size=5),
)
EVENT = st.one_of(TURN, REPORT)


def _in_unit(x: float) -> bool:
    return 0.0 <= x <= 1.0 and not math.isnan(x)


def _valid(estimate: PhaseEstimate, phases: tuple[str, ...]) -> None:
    p = estimate.distribution
    assert len(p) == len(phases)
    assert all(x >= 0.0 for x in p)
    assert abs(sum(p) - 1.0) <= 1e-9
    assert _in_unit(estimate.entropy)
    assert _in_unit(estimate.transition_likelihood)
    assert estimate.confidence == max(p)
    assert estimate.name == phases[p.index(max(p))]


@given(TOKENS, TOKENS)
def test_token_fraction_in_unit_interval(tokens: int, window: int) -> None:
    """token_fraction stays in [0, 1] for any token count and window."""
    assert _in_unit(token_fraction(tokens, window))


@given(ANY_FLOAT, ANY_FLOAT)
def test_token_fraction_in_unit_interval_for_floats(tokens: float, window: float) -> None:
    """token_fraction stays in [0, 1] even for NaN and infinite inputs."""
    assert _in_unit(token_fraction(tokens, window))


@given(
    st.lists(TOKENS, max_size=30),
    TOKENS,
    st.integers(min_value=-2, max_value=40),
    st.floats(min_value=0.0, max_value=1.0, exclude_min=True),
)
def test_attention_decay_in_unit_interval(
    sizes: list[int], window: int, k: int, decay: float
) -> None:
    """attention_decay stays in [0, 1] for any sizes, window, K and decay."""
    assert _in_unit(attention_decay(sizes, window, k, decay))


@given(st.lists(st.tuples(TOKENS, TOKENS, st.lists(TOKENS, max_size=6)), max_size=20))
def test_pressure_tracker_in_unit_interval(turns: list[tuple[int, int, list[int]]]) -> None:
    """The tracker's fractions stay in [0, 1] turn after turn, and its memory stays at K."""
    tracker = PressureTracker(Settings())
    for context, window, outputs in turns:
        pressure = tracker.observe(context, window, outputs)
        assert _in_unit(pressure.token_fraction)
        assert _in_unit(pressure.attention_decay)
        assert len(tracker.recent_tool_outputs) <= Settings().attention_window


@given(st.lists(ANY_FLOAT, min_size=1, max_size=8))
def test_entropy_in_unit_interval(weights: list[float]) -> None:
    """normalized_entropy stays in [0, 1] for any weights, even negative or NaN ones."""
    assert _in_unit(normalized_entropy(weights))


@given(
    st.integers(min_value=1, max_value=7).flatmap(
        lambda k: st.tuples(st.just(k), st.lists(ANY_FLOAT, min_size=k, max_size=k))
    ),
    st.floats(min_value=0.01, max_value=0.99),
)
def test_transition_likelihood_in_unit_interval(
    k_and_weights: tuple[int, list[float]], stickiness: float
) -> None:
    """transition_likelihood stays in [0, 1] for any belief and stickiness."""
    k, weights = k_and_weights
    a = transition_matrix(k, stickiness)
    assert np.allclose(a.sum(axis=1), 1.0)
    assert _in_unit(transition_likelihood(weights, a))


@settings(max_examples=150)
@given(st.lists(EVENT, max_size=25))
def test_tracker_estimates_are_distributions(
    events: list[PhaseReport | list[tuple[str, str | None]]],
) -> None:
    """Any interleaving of turns and reports yields valid estimates after every step."""
    tracker = PhaseTracker(Settings())
    _valid(tracker.current, PHASES)
    for event in events:
        if isinstance(event, PhaseReport):
            estimate = tracker.report(event)
        else:
            estimate = tracker.observe_turn([n for n, _ in event], [a for _, a in event])
            transition = tracker.last_transition
            assert transition is None or transition.to_phase == estimate.name
        _valid(estimate, PHASES)
        assert tracker.current == estimate


@settings(max_examples=50)
@given(
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True),
    st.floats(min_value=0.01, max_value=0.99),
    st.lists(TURN, max_size=15),
)
def test_tracker_with_any_phases(
    phases: list[str], stickiness: float, turns: list[list[tuple[str, str | None]]]
) -> None:
    """Any configured phase list and stickiness yields valid estimates."""
    tracker = PhaseTracker(Settings(phases=tuple(phases), phase_stickiness=stickiness))
    for calls in turns:
        _valid(tracker.observe_turn([n for n, _ in calls], [a for _, a in calls]), tuple(phases))


@given(TOOL_NAMES, ARGUMENTS)
def test_categorize_tool_never_raises(name: str, arguments: str | None) -> None:
    """Any tool name and arguments map to a category without raising."""
    assert isinstance(categorize_tool(name, arguments), ToolCategory)
