"""The per-turn fast paths give bit for bit what the plain formulas they replaced give.

Each reference below is the straightforward code the trackers ran before their
per-turn work was fused (same sums, same order of operations); the trackers must
return the same floats, compared by ``repr`` so that -0.0 and 0.0 differ.
"""

from __future__ import annotations

import math
import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import PhaseEstimate, PhaseReport, Pressure
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals import PhaseTracker, PressureTracker
from otel_compaction.signals.phase import reported_floats
from otel_compaction.signals.phase_model import FilterTables, Floats, filter_tables
from otel_compaction.signals.tools import CATEGORIES, ToolCategory, categorize_tool

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
SIZES = st.integers(min_value=-5, max_value=10**6) | st.sampled_from([2**63 - 1, 2**63, -(2**70)])
TURN_OUTPUTS = st.lists(SIZES | st.booleans(), max_size=10).map(tuple)
WINDOWS = st.sampled_from([0, -1, 1, 1_000, 200_000, 1_000_000])
PHASE_LISTS = st.sampled_from(
    [("explore", "hypothesize", "patch", "verify"), ("work",), ("plan", "implement", "test")]
)


def _old_clip01(value: float) -> float:
    return 0.0 if math.isnan(value) else min(1.0, max(0.0, value))


def _old_pressure(
    sizes: tuple[int, ...], context_tokens: int, window: int, k: int, decay: float
) -> Pressure:
    fraction = 0.0
    if window > 0 and context_tokens > 0:
        fraction = _old_clip01(context_tokens / window)
    attention = 0.0
    if sizes and window > 0:
        total, weight = 0.0, 1.0
        for size in reversed(sizes[-k:]):
            if size > 0:
                total += weight * size
            weight *= decay
        attention = _old_clip01(total / window)
    return Pressure(context_tokens, window, fraction, attention)


def _old_estimate(tables: FilterTables, p: Floats, source: PhaseSource) -> PhaseEstimate:
    c = p.index(max(p))
    entropy = 0.0
    if tables.k > 1:
        if min(p) > 0.0:
            h = -sum(map(operator.mul, p, map(math.log, p)))
        else:
            h = -sum([x * math.log(x) for x in p if x > 0.0])
        entropy = min(1.0, max(0.0, h / math.log(tables.k)))
    column = [float(a) for a in tables.transitions[:, c]]
    flip = min(1.0, max(0.0, 1.0 - sum(map(operator.mul, p, column))))
    return PhaseEstimate(tables.phases[c], p[c], entropy, flip, source, p, tables.phases)


@given(ANY_FLOAT)
def test_clip_equals_min_of_max(value: float) -> None:
    """The branch clip equals min(1, max(0, x)) everywhere, NaN and -0.0 included."""
    from otel_compaction.signals.pressure import clip01

    assert repr(clip01(value)) == repr(_old_clip01(value))


@settings(max_examples=200)
@given(
    st.integers(min_value=1, max_value=9),
    st.sampled_from([0.5, 0.8, 1.0]),
    st.lists(st.tuples(st.integers(-10, 10**7), WINDOWS, TURN_OUTPUTS, st.booleans()), max_size=30),
)
def test_pressure_equals_the_reference(
    k: int, decay: float, turns: list[tuple[int, int, tuple[int, ...], bool]]
) -> None:
    """Every turn's pressure and the kept sizes equal the reference (that a full tracker
    does not grow is ``test_pressure``'s)."""
    tracker = PressureTracker(Settings(attention_window=k, attention_decay=decay))
    kept: tuple[int, ...] = ()
    for context, window, outputs, prune in turns:
        if prune:
            tracker.clear()
            kept = ()
        kept = (*kept, *(int(size) for size in outputs))[-k:]
        assert repr(tracker.observe(context, window, outputs)) == repr(
            _old_pressure(kept, context, window, k, decay)
        )
        assert tracker.recent_tool_outputs == kept


@settings(max_examples=200)
@given(
    PHASE_LISTS,
    st.floats(min_value=0.01, max_value=0.99),
    st.lists(
        st.lists(st.sampled_from(CATEGORIES), max_size=3).map(tuple)
        | st.builds(PhaseReport, st.sampled_from(["explore", "plan", "work"]), ANY_FLOAT),
        max_size=30,
    ),
)
def test_phase_estimates_equal_the_reference(
    phases: tuple[str, ...],
    stickiness: float,
    events: list[tuple[ToolCategory, ...] | PhaseReport],
) -> None:
    """Every turn's filtered belief (phase, confidence, entropy, distribution) and transition
    equal the reference filter's, reports included; the transition likelihood, measured
    against the held phase, is the tracker's own (``test_phase_evidence``)."""
    tracker = PhaseTracker(
        Settings(phases=phases, phase_stickiness=stickiness, phase_min_evidence_turns=0)
    )
    tables = filter_tables(phases, stickiness)
    belief, source, pending, last = tables.uniform, PhaseSource.INFERRED, False, None
    for turn, event in enumerate(events, start=1):
        if isinstance(event, PhaseReport):
            reported = reported_floats(event, phases)
            got = tracker.report(event)
            if reported is not None:
                belief, source, pending = reported, PhaseSource.REPORTED, True
            assert _model(got) == _model(_old_estimate(tables, belief, source))
            continue
        if not pending:
            belief = tables.step(belief, tables.likelihood(event))
            source = PhaseSource.INFERRED
        pending = False
        expected = _old_estimate(tables, belief, source)
        got = tracker.observe_categories(event, turn)
        assert _model(got) == _model(expected)
        transition = tracker.last_transition
        changed = last is not None and last != expected.name
        assert (transition is not None) == changed
        if transition is not None:
            assert (transition.from_phase, transition.to_phase) == (last, expected.name)
            assert transition.transition_likelihood == got.transition_likelihood
        last = expected.name
    assert _model(tracker.current) == _model(_old_estimate(tables, belief, source))


def _model(estimate: PhaseEstimate) -> str:
    """The part of an estimate that is the filter's alone, exactly."""
    return repr(
        (estimate.name, estimate.confidence, estimate.entropy, estimate.source,
         estimate.distribution, estimate.names)
    )  # fmt: skip


@given(
    st.lists(st.sampled_from(["read_file", "bash", "edit", "str_replace_based_edit_tool"])),
    st.lists(st.none() | st.sampled_from(['{"command": "pytest"}', '{"command": "view"}'])),
)
def test_categories_pad_missing_arguments_with_none(
    calls: list[str], arguments: list[str | None]
) -> None:
    """Calls without an argument are categorised as with None; extra arguments are ignored."""
    tracker = PhaseTracker(Settings())
    expected = tuple(
        categorize_tool(name, arguments[i] if i < len(arguments) else None)
        for i, name in enumerate(calls)
    )
    assert tracker.categories(tuple(calls), tuple(arguments) or None) == expected
