"""The phase plan's truth of "straddling two phases after one was held with confidence"."""

from __future__ import annotations

import random

from truth_phases import HELD_BLOCK, PhasePlan


def _plan(reported: bool, calls: int, force_at: int) -> PhasePlan:
    plan = PhasePlan(random.Random(3), reported)
    for call in range(1, calls + 1):
        plan.next(force=call == force_at)
    return plan


def test_a_reported_straddle_after_a_held_block_is_a_boundary() -> None:
    """Reported: the report before the compaction's first call straddles the old and new phase."""
    plan = _plan(reported=True, calls=8, force_at=6)
    straddle = plan.steps[5]
    assert straddle.kind == "straddle"
    assert straddle.report is not None
    top, second = sorted(straddle.report.values(), reverse=True)[:2]
    assert top < 0.55
    assert top - second < 0.1
    assert plan.boundary(6) is True
    assert plan.boundary(5) is False  # held
    assert plan.boundary(7) is None  # settling: no truth


def test_an_inferred_boundary_is_the_first_call_of_a_new_phase() -> None:
    """Inferred: the last call before the compaction is the first of a new block."""
    plan = _plan(reported=False, calls=8, force_at=HELD_BLOCK + 2)
    assert plan.boundary(HELD_BLOCK + 3) is True
    assert plan.boundary(HELD_BLOCK + 2) is False  # the old phase was held
    assert plan.boundary(HELD_BLOCK + 4) is None


def test_too_little_evidence_is_no_boundary() -> None:
    """Inferred: before three calls of evidence the phase is unknown, never a boundary."""
    plan = _plan(reported=False, calls=3, force_at=2)
    assert plan.boundary(2) is False
    assert plan.boundary(3) is False
