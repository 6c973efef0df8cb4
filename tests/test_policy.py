"""The decision API: should_compact, check_compaction_health and the advisor.

Their rules: docs/concepts.md#boundary-compaction and #re-expansion-livelock.
"""

from __future__ import annotations

import pytest

from otel_compaction.config import Settings
from otel_compaction.model import PhaseEstimate
from otel_compaction.policy import (
    AdvisorState,
    CompactionAdvisor,
    CompactionReexpansionError,
    PhaseBoundaryCompactionError,
    advise_conversation,
    check_compaction_health,
    should_compact,
)
from otel_compaction.semconv import AdviceAction, PhaseSource
from tests.detectors.scenarios import NOTE_004_INTERVALS, note_000_replay, note_004_run


def test_no_pressure_means_no_compaction() -> None:
    """Below the pressure threshold on both signals, should_compact is False even at a boundary."""
    assert should_compact(0.50, 0.20, 0.90) is False


def test_pressure_with_a_stable_phase_compacts() -> None:
    """Pressure due and a stable phase: compact."""
    assert should_compact(0.81, 0.10, 0.12) is True


def test_attention_decay_alone_is_pressure() -> None:
    """Attention decay at the threshold makes compaction due on its own."""
    assert should_compact(0.30, 0.65, 0.10) is True


def test_veto_raises_with_the_numbers() -> None:
    """The boundary rule: pressure due and transition likelihood > 0.35 raises, naming both."""
    with pytest.raises(PhaseBoundaryCompactionError, match=r"transition_likelihood=0\.52") as err:
        should_compact(0.71, 0.30, 0.52)
    assert "token_fraction=0.71" in str(err.value)
    assert (err.value.token_fraction, err.value.transition_likelihood) == (0.71, 0.52)
    assert isinstance(err.value, RuntimeError)


def test_hard_ceiling_overrides_the_veto() -> None:
    """At the hard ceiling compaction proceeds (the caller must go extractive), no error."""
    assert should_compact(0.92, 0.0, 0.99) is True


@pytest.mark.parametrize(
    ("tf", "tl", "expected"),
    [(0.65, 0.35, True), (0.6499, 0.99, False), (0.80, 0.3501, None)],
)
def test_should_compact_edges(tf: float, tl: float, expected: bool | None) -> None:
    """Thresholds are inclusive for pressure and strict for the veto (None: raises)."""
    if expected is None:
        with pytest.raises(PhaseBoundaryCompactionError):
            should_compact(tf, 0.0, tl)
    else:
        assert should_compact(tf, 0.0, tl) is expected


def test_custom_thresholds() -> None:
    """The keyword thresholds replace the defaults."""
    assert should_compact(0.55, 0.0, 0.40, pressure_threshold=0.5, transition_veto=0.45) is True
    assert should_compact(0.85, 0.0, 0.9, hard_ceiling=0.85) is True


def test_health_check_raises_on_accelerating_flat_run() -> None:
    """The cadence rule: intervals shrinking >20% three times under flat load raise."""
    with pytest.raises(CompactionReexpansionError, match=r"\[9, 7, 5, 3\]") as err:
        check_compaction_health([9, 9, 9, 7, 5, 3], [610, 600, 590, 605])
    assert "spread 0.03" in str(err.value)
    assert "reset compaction lineage" in str(err.value)
    assert err.value.intervals == (9, 7, 5, 3)


@pytest.mark.parametrize(
    ("intervals", "content"),
    [
        ([11, 10, 12, 9], [600, 610, 590, 600]),  # the livelock incident's reset run
        ([9, 5, 2], [600, 600, 600]),  # three intervals never fire
        ([10, 8, 5, 3], [600, 600, 600, 600]),  # the first shrink is exactly 20%
        ([10, 7, 5, 3], [600, 700, 600, 600]),  # load not flat (spread 0.16)
        ([10, 7, 5, 3], []),  # no content measurement: flatness cannot be shown
        ([10, 7, 5, 3], [0, 600, 0, 0]),  # zero mean of a varying load: not flat
        ([0, 0, 0, 0], [600, 600, 600, 600]),  # nothing shrinks from an empty interval
    ],
)
def test_health_check_does_not_raise(intervals: list[int], content: list[int]) -> None:
    """Healthy cadences and every edge of the livelock incident's rule pass without error."""
    check_compaction_health(intervals, content)


def test_health_check_all_zero_content_is_flat() -> None:
    """No new content at all is a flat load: an accelerating cadence then is livelock."""
    with pytest.raises(CompactionReexpansionError, match=r"spread 0\.00"):
        check_compaction_health([10, 7, 5, 3], [0, 0, 0, 0])


def _phase(name: str, confidence: float, tl: float) -> PhaseEstimate:
    return PhaseEstimate(name, confidence, 0.4, tl, PhaseSource.REPORTED, (0.1, 0.2, 0.6, 0.1))


STABLE = _phase("patch", 0.88, 0.24)
FLIPPING = _phase("hypothesize", 0.48, 0.58)


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (AdvisorState(0.95, phase=FLIPPING, turn_index=40, livelocked=True), "reset_lineage"),
        (AdvisorState(0.93, phase=STABLE, turn_index=5), "compact_extractive"),
        (AdvisorState(0.40, 0.2, phase=FLIPPING, turn_index=40), "continue"),
        (AdvisorState(0.40, 0.70, phase=STABLE, turn_index=12), "prune_tool_outputs"),
        (AdvisorState(0.80, phase=STABLE, turn_index=12), "compact"),
        (AdvisorState(0.71, phase=FLIPPING, turn_index=30), "defer"),
        (
            AdvisorState(0.70, 0.70, phase=STABLE, turn_index=40, phase_turns=15),
            "prune_tool_outputs",
        ),
        (AdvisorState(0.70, 0.70, phase=STABLE, turn_index=40, phase_turns=3), "compact"),
        (AdvisorState(0.75, phase=None, turn_index=40), "compact_extractive"),
        (AdvisorState(0.81, phase=STABLE, turn_index=34), "compact"),
    ],
)
def test_advisor_rules(state: AdvisorState, action: str) -> None:
    """Each advisor rule in order: livelock, ceiling, no pressure, short run, veto, stuck."""
    advice = CompactionAdvisor(Settings()).advise(state)
    assert advice.action is AdviceAction(action)
    assert advice.reason
    if advice.action is AdviceAction.COMPACT_EXTRACTIVE:
        assert advice.preserve_tail_turns == 8
    else:
        assert advice.preserve_tail_turns is None


def test_advisor_stuck_turns_is_configurable() -> None:
    """The stuck threshold is an advisor argument."""
    state = AdvisorState(0.70, 0.70, phase=STABLE, turn_index=40, phase_turns=5)
    advice = CompactionAdvisor(Settings(), stuck_turns=5).advise(state)
    assert advice.action is AdviceAction.PRUNE_TOOL_OUTPUTS


def test_advise_conversation_follows_note_000() -> None:
    """Live on the boundary incident: defer at turn 30 (phase flipping), compact at 34 (settled)."""
    at_30, _ = note_000_replay(None, stop_before=30)
    advice = advise_conversation(at_30)
    assert advice.action is AdviceAction.DEFER
    assert "token fraction 0.71" in advice.reason
    at_34, _ = note_000_replay(None, stop_before=34)
    assert advise_conversation(at_34).action is AdviceAction.COMPACT


def test_advise_conversation_resets_a_livelocked_lineage() -> None:
    """On the livelock incident's accelerating run the advisor says reset the lineage."""
    analyzer, _ = note_004_run(NOTE_004_INTERVALS)
    advice = advise_conversation(analyzer)
    assert advice.action is AdviceAction.RESET_LINEAGE
    assert "pin task constraints" in advice.reason
