"""The phase filter in plain floats: the oracle the package's numpy filter is held to.

The same formulas as ``otel_compaction.signals.phase_model`` (``docs/signals.md``),
written out as sums over tuples of Python floats, with nothing shared with the package
but the model's matrices.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from otel_compaction.model import PhaseEstimate
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals.phase_model import FilterTables, Floats
from otel_compaction.signals.tools import CATEGORIES, ToolCategory


def _column(tables: FilterTables, j: int) -> Floats:
    """Column j of the transition matrix A: ``sum(p_i * column[i])`` is ``(p A)_j``."""
    return tuple(float(x) for x in tables.transitions[:, j])


def likelihood(tables: FilterTables, categories: Sequence[ToolCategory]) -> Floats:
    """P(turn | phase): the mean emission column of the turn's categories (none: NONE's)."""
    columns = [
        tuple(float(x) for x in tables.emissions[:, CATEGORIES.index(c)])
        for c in (categories or (ToolCategory.NONE,))
    ]
    return tuple(sum(column[i] for column in columns) / len(columns) for i in range(tables.k))


def normalize(weights: Sequence[float]) -> Floats:
    """Weights scaled to sum to 1; NaN, infinite and negative weights count as 0."""
    w = [float(x) if math.isfinite(x) and x > 0.0 else 0.0 for x in weights]
    top = max(w, default=0.0)
    if not top > 0.0:
        return (1.0 / max(len(w), 1),) * len(w)
    w = [x / top for x in w]
    total = sum(w)
    return tuple([x / total for x in w])


def step(tables: FilterTables, belief: Sequence[float], evidence: Floats) -> Floats:
    """``b' ∝ (b A) ⊙ L``; the prediction when L is zero everywhere."""
    predicted = [sum(map(operator.mul, belief, _column(tables, j))) for j in range(tables.k)]
    posterior = list(map(operator.mul, predicted, evidence))
    total = sum(posterior)
    if not total > 0.0:
        return normalize(predicted)
    return tuple([x / total for x in posterior])


def estimate(tables: FilterTables, p: Floats, source: PhaseSource) -> PhaseEstimate:
    """The most likely phase (the first on ties), normalised entropy and flip probability."""
    c = p.index(max(p))
    entropy = 0.0
    if tables.k > 1:
        h = -sum([x * math.log(x) for x in p if x > 0.0])
        entropy = min(1.0, max(0.0, h / math.log(tables.k)))
    flip = min(1.0, max(0.0, 1.0 - sum(map(operator.mul, p, _column(tables, c)))))
    return PhaseEstimate(tables.phases[c], p[c], entropy, flip, source, p, tables.phases)


def clear_top(p: Floats, margin: float = 1e-9) -> bool:
    """Whether ``p``'s most likely phase leads the next by more than rounding can move."""
    ranked = sorted(p, reverse=True)
    return len(ranked) < 2 or ranked[0] - ranked[1] > margin


def same_belief(got: PhaseEstimate, expected: PhaseEstimate, tol: float = 1e-9) -> bool:
    """The filter's part of two estimates agrees to rounding: phase (on a clear lead),
    confidence, entropy, distribution, source and names."""
    close = [
        math.isclose(a, b, rel_tol=0, abs_tol=tol)
        for a, b in zip(
            (got.confidence, got.entropy, *got.distribution),
            (expected.confidence, expected.entropy, *expected.distribution),
            strict=True,
        )
    ]
    name_ok = got.name == expected.name or not clear_top(expected.distribution)
    return all(close) and name_ok and (got.source, got.names) == (expected.source, expected.names)
