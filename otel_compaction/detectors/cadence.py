"""The livelock's numeric rule, once: accelerating compaction cadence under flat load.

Why: docs/concepts.md#re-expansion-livelock.

Used by the ``reexpansion_livelock`` detector and by
``policy.check_compaction_health``. With ``recent`` the last ``min_intervals``
(default 4) compaction intervals, oldest first:

- ``shrink_i = (recent[i] - recent[i+1]) / recent[i]`` (0 when ``recent[i] <= 0``:
  nothing shrinks from an empty interval);
- accelerating: every ``shrink_i > shrink_threshold``, strictly (a shrink of exactly
  20% does not count);
- ``spread = (max - min) / mean`` of the new-content-per-turn values (0 when all
  are equal, also all zero; infinite when they differ and the mean is not positive);
- load flat: ``spread <= content_stability``; no values at all is not flat;
- livelock: accelerating and load flat. Fewer than ``min_intervals`` intervals
  never decide anything.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CadenceVerdict:
    """The numbers behind the cadence decision, for the reason and the error message."""

    recent: tuple[float, ...]
    shrinks: tuple[float, ...]
    spread: float
    accelerating: bool
    load_flat: bool

    @property
    def livelock(self) -> bool:
        """Whether the cadence accelerates while the load is flat."""
        return self.accelerating and self.load_flat


def shrink(previous: float, current: float) -> float:
    """How much an interval shrank relative to the one before it (negative: grew)."""
    if previous <= 0:
        return 0.0
    return (previous - current) / previous


def load_spread(values: Sequence[float]) -> float | None:
    """``(max - min) / mean`` of ``values``; None when there are none."""
    if not values:
        return None
    low, high = min(values), max(values)
    if high == low:
        return 0.0
    mean = math.fsum(values) / len(values)
    return (high - low) / mean if mean > 0 else math.inf


def cadence_verdict(
    intervals: Sequence[float],
    content_per_turn: Sequence[float],
    *,
    shrink_threshold: float = 0.20,
    content_stability: float = 0.15,
    min_intervals: int = 4,
) -> CadenceVerdict | None:
    """Judge the last ``min_intervals`` intervals; None when there are fewer.

    Args:
        intervals: turns between successive compactions, oldest first.
        content_per_turn: new task tokens per turn over the same span.
        shrink_threshold: a shrink must exceed this fraction to count.
        content_stability: the largest spread that still counts as flat.
        min_intervals: how many intervals the rule needs (and looks at).
    """
    if len(intervals) < min_intervals:
        return None
    recent = tuple(intervals[-min_intervals:])
    shrinks = tuple(shrink(a, b) for a, b in itertools.pairwise(recent))
    spread = load_spread(content_per_turn)
    return CadenceVerdict(
        recent=recent,
        shrinks=shrinks,
        spread=math.inf if spread is None else spread,
        accelerating=all(s > shrink_threshold for s in shrinks),
        load_flat=spread is not None and spread <= content_stability,
    )


def format_numbers(values: Sequence[float], pattern: str = "{:g}") -> str:
    """``[9, 7, 5, 3]``-style rendering of numbers for reasons and messages."""
    return "[" + ", ".join(pattern.format(v) for v in values) + "]"
