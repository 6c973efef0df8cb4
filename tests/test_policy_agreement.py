"""The policy and the boundary detector apply one rule: they agree on every input.

Agreement, precisely: for every token fraction, attention decay and transition
likelihood (NaN included) and every set of thresholds, with ``outcome`` what
``should_compact`` does (``wait``: False, ``compact``: True, ``refuse``: raises
``PhaseBoundaryCompactionError``) and ``rule`` the boundary finding on a lossy
compaction at that moment (a known phase):

- the policy refuses exactly where the detector flags rule ``veto``;
- the detector flags rule ``ceiling`` exactly where the policy compacts at the
  hard ceiling (extractively) while the phase is about to flip;
- where the policy waits, nothing is flagged;
- the advisor defers exactly where the policy refuses, continues where it waits;
- the advisor and the detectors never disagree: a compaction made as advised, at any
  turn of a run of any length, draws no boundary or short-run finding, and where a
  detector would flag a lossy compaction the advisor never says ``compact``
  (no ``continue: short run`` at pressure).

Where they legitimately differ (``test_what_only_the_detector_judges``): the
detector judges a compaction that happened, so it skips what cannot lose
evidence (extractive and prune compactions), a phase it does not know yet, and,
with ``boundary_scope="client_lossy"``, provider-side compactions; the policy
takes a bare likelihood and decides for the caller whatever comes next. And at
the ceiling with a stable phase the policy asks for an extractive compaction
while the detector does not flag a lossy one (nothing was about to flip).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Unpack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.detectors import boundary_compaction, short_run_compaction
from otel_compaction.model import Pressure
from otel_compaction.policy import (
    AdvisorState,
    CompactionAdvisor,
    PhaseBoundaryCompactionError,
    should_compact,
)
from otel_compaction.semconv import AdviceAction, CompactionMode, CompactionSource
from tests.detectors.records import RecordFields, context_of, phase, record

UNIT = st.floats(min_value=0.0, max_value=1.0)
THRESHOLD = st.one_of(st.sampled_from([0.0, 0.35, 0.65, 0.92, 1.0]), UNIT)
Moment = tuple[Settings, float, float, float]


@st.composite
def moments(draw: st.DrawFn) -> Moment:
    """Thresholds, then a pressure and likelihood often exactly on one of them, or NaN."""
    s = Settings(
        pressure_threshold=draw(THRESHOLD),
        transition_veto=draw(THRESHOLD),
        hard_ceiling=draw(THRESHOLD),
    )
    edges = [s.pressure_threshold, s.transition_veto, s.hard_ceiling]
    value = st.one_of(UNIT, st.sampled_from(edges), st.just(math.nan))
    return s, draw(value), draw(value), draw(value)


def _outcome(s: Settings, tf: float, ad: float, tl: float) -> str:
    try:
        compact = should_compact(
            tf,
            ad,
            tl,
            hard_ceiling=s.hard_ceiling,
            pressure_threshold=s.pressure_threshold,
            transition_veto=s.transition_veto,
        )
    except PhaseBoundaryCompactionError:
        return "refuse"
    return "compact" if compact else "wait"


def _flag(
    s: Settings,
    tf: float,
    ad: float,
    tl: float,
    *,
    known: bool = True,
    **fields: Unpack[RecordFields],
) -> str | None:
    """The boundary rule's verdict on a compaction (lossy unless ``fields`` say otherwise)
    at this moment, the phase ``known`` or not (None: not flagged)."""
    fields["token_fraction"] = tf
    rec = record(**fields)
    at = Pressure(context_tokens=0, window=200_000, token_fraction=tf, attention_decay=ad)
    ph = dataclasses.replace(phase((0.05, 0.48, 0.44, 0.03), tl), known=known)
    finding = boundary_compaction(context_of([rec], s, pressure=at, phase=ph))
    return finding.rule if finding is not None else None


@given(moments())
@settings(max_examples=600, deadline=None)
def test_policy_refuses_lossy_compaction_exactly_where_the_detector_flags_it(
    moment: Moment,
) -> None:
    """should_compact and the boundary detector agree on every pressure, likelihood and
    threshold (the module docstring defines agreement)."""
    s, tf, ad, tl = moment
    outcome, rule = _outcome(s, tf, ad, tl), _flag(s, tf, ad, tl)
    assert (outcome == "refuse") == (rule == "veto")
    vetoed_at_ceiling = outcome == "compact" and tf >= s.hard_ceiling and tl > s.transition_veto
    assert (rule == "ceiling") == vetoed_at_ceiling
    if outcome == "wait":
        assert rule is None


@given(moments())
@settings(max_examples=300, deadline=None)
def test_the_advisor_defers_exactly_where_the_policy_refuses(moment: Moment) -> None:
    """With a known phase, past the short-run bound and not stuck, the advisor's action is
    the policy's decision: defer for refuse, continue for wait, compact otherwise."""
    s, tf, ad, tl = moment
    state = AdvisorState(
        token_fraction=tf,
        attention_decay=ad,
        phase=phase((0.05, 0.48, 0.44, 0.03), tl),
        turn_index=s.short_run_turns,
    )
    action = CompactionAdvisor(s).advise(state).action
    outcome = _outcome(s, tf, ad, tl)
    if outcome == "refuse":
        assert action is AdviceAction.DEFER
    elif outcome == "wait":
        assert action is AdviceAction.CONTINUE
    elif tf >= s.hard_ceiling:
        assert action is AdviceAction.COMPACT_EXTRACTIVE
    else:
        assert action is AdviceAction.COMPACT


_MODE_OF = {
    AdviceAction.COMPACT: CompactionMode.LOSSY,
    AdviceAction.COMPACT_EXTRACTIVE: CompactionMode.EXTRACTIVE,
    AdviceAction.PRUNE_TOOL_OUTPUTS: CompactionMode.PRUNE,
}
"""The compaction an agent makes on each advice that asks for one."""


def _findings(
    s: Settings, tf: float, ad: float, tl: float, turn: int, run: int, mode: str
) -> set[str]:
    """The boundary and short-run findings on a ``mode`` compaction made after ``turn``
    calls (so at turn ``turn + 1``) of a run that ended at ``run``, the phase known."""
    rec = record(turn + 1, token_fraction=tf, mode=CompactionMode(mode))
    at = Pressure(context_tokens=0, window=200_000, token_fraction=tf, attention_decay=ad)
    ctx = context_of([rec], s, pressure=at, phase=phase((0.05, 0.48, 0.44, 0.03), tl))
    found = (
        boundary_compaction(ctx),
        short_run_compaction(dataclasses.replace(ctx, run_turns=run)),
    )
    return {f.kind.value for f in found if f is not None}


@given(moments(), st.integers(0, 45), st.integers(0, 30))
@settings(max_examples=600, deadline=None)
def test_the_advisor_and_the_detectors_never_disagree(moment: Moment, turn: int, more: int) -> None:
    """For every state (pressure, likelihood, thresholds, turns so far) and every length the
    run goes on to: the compaction the advice asks for draws no finding, and where a lossy
    compaction would be flagged the advice is never ``compact``."""
    s, tf, ad, tl = moment
    state = AdvisorState(
        token_fraction=tf,
        attention_decay=ad,
        phase=phase((0.05, 0.48, 0.44, 0.03), tl),
        turn_index=turn,
    )
    advice = CompactionAdvisor(s).advise(state)
    run = turn + 1 + more
    mode = _MODE_OF.get(advice.action)
    if mode is not None:
        assert _findings(s, tf, ad, tl, turn, run, mode.value) == set(), advice.reason
    lossy = _findings(s, tf, ad, tl, turn, run, CompactionMode.LOSSY.value)
    if lossy:
        assert advice.action is not AdviceAction.COMPACT
    if _flag(s, tf, ad, tl) == "veto":  # the detector would flag a lossy one: say why not
        assert advice.action in (AdviceAction.DEFER, AdviceAction.PRUNE_TOOL_OUTPUTS)
    if advice.action is AdviceAction.CONTINUE:  # never "continue" at pressure
        assert _outcome(s, tf, ad, tl) == "wait", advice.reason


def test_no_short_run_continue_at_pressure() -> None:
    """At 0.65 of a 200k window at turn 17 with the phase flipping, the advice is
    to defer (the boundary rule), not to continue because the run is short."""
    state = AdvisorState(
        token_fraction=0.65, phase=phase((0.05, 0.48, 0.44, 0.03), 0.52), turn_index=17
    )
    advice = CompactionAdvisor(Settings()).advise(state)
    assert advice.action is AdviceAction.DEFER
    assert "short run" not in advice.reason


@pytest.mark.parametrize(
    ("known", "fields"),
    [
        (True, RecordFields(mode=CompactionMode.EXTRACTIVE)),
        (True, RecordFields(mode=CompactionMode.PRUNE)),
        (False, RecordFields()),
    ],
    ids=["extractive", "prune", "phase-unknown"],
)
def test_what_only_the_detector_judges(known: bool, fields: RecordFields) -> None:
    """Where the policy refuses, the detector still does not flag what cannot lose
    evidence (extractive, prune) or a phase it does not know yet."""
    s = Settings()
    assert _outcome(s, 0.8, 0.0, 0.6) == "refuse"
    assert _flag(s, 0.8, 0.0, 0.6) == "veto"
    assert _flag(s, 0.8, 0.0, 0.6, known=known, **fields) is None


def test_client_lossy_scope_leaves_provider_compactions_unjudged() -> None:
    """With boundary_scope="client_lossy" a provider's compaction is not judged, though
    the policy would have refused a lossy one there."""
    s = Settings(boundary_scope="client_lossy")
    server = RecordFields(mode=CompactionMode.SERVER, source=CompactionSource.ANTHROPIC)
    assert _outcome(s, 0.8, 0.0, 0.6) == "refuse"
    assert _flag(Settings(), 0.8, 0.0, 0.6, **server) == "veto"
    assert _flag(s, 0.8, 0.0, 0.6, **server) is None


def test_policy_defaults_are_the_settings_defaults() -> None:
    """should_compact's keyword defaults are Settings' defaults: one set of thresholds."""
    defaults = Settings()
    parameters = inspect.signature(should_compact).parameters
    for name in ("hard_ceiling", "pressure_threshold", "transition_veto"):
        assert parameters[name].default == getattr(defaults, name)
