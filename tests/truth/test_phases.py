"""The phase plan's truth of "straddling two phases after one was held with confidence"."""

from __future__ import annotations

import random

from benchmarks.truth.phases import HELD_BLOCK, READ_ONLY, PhasePlan


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
    """Inferred: the last call before the compaction is the first of a new block; leaving a
    block that only read (explore) has no truth, since reads never reach the hold."""
    first, second = HELD_BLOCK + 2, 2 * HELD_BLOCK + 3
    plan = PhasePlan(random.Random(3), False)
    for call in range(1, second + 3):
        plan.next(force=call in (first, second))
    assert plan.steps[first - 2].phase in READ_ONLY
    assert plan.boundary(first + 1) is None  # left an exploration
    assert plan.steps[second - 2].phase not in READ_ONLY
    assert plan.boundary(second + 1) is True
    assert plan.boundary(second) is False  # the old phase was held
    assert plan.boundary(second + 2) is None


def test_too_little_evidence_is_no_boundary() -> None:
    """Inferred: before three calls of evidence the phase is unknown, never a boundary."""
    plan = _plan(reported=False, calls=3, force_at=2)
    assert plan.boundary(2) is False
    assert plan.boundary(3) is False
