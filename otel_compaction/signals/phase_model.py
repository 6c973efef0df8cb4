"""The hidden Markov model of task phases: its matrices and the pure filter maths.

States are ``Settings.phases`` in order (default explore, hypothesize, patch,
verify); observations are the :class:`~otel_compaction.signals.tools.ToolCategory`
of each turn. Everything here is a pure function of its arguments; the stateful
filter is :class:`~otel_compaction.signals.phase.PhaseTracker`. The formulas and
worked numbers are in ``docs/signals.md``.

The matrices are numpy arrays (the public, documented form). The per-turn filter
runs on :class:`FilterTables`, the same numbers as tuples of Python floats: for
K = 4 a numpy call costs more than the arithmetic it does (about 1 µs each, a
dozen per turn), while plain floats do the whole step in a few microseconds.
Both forms give the same results to rounding (about 1e-15).
"""

from __future__ import annotations

import functools
import math
import operator
import struct
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_compaction._bounded import BoundedMap
from otel_compaction.model import PhaseEstimate
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals.pressure import clip01
from otel_compaction.signals.tools import CATEGORIES, ToolCategory

FloatArray = npt.NDArray[np.float64]

PROGRESSION_SHARE: Final = 0.7
"""Share of the mass leaving phase i < K-1 that goes to phase i+1 (the next step)."""
LOOP_BACK_SHARE: Final = 0.6
"""Share of the mass leaving the last phase that goes back one (verify -> patch: fix again)."""
RESTART_SHARE: Final = 0.3
"""Share of the mass leaving the last phase that goes to the first (verify -> explore)."""

# P(tool category | phase), columns in CATEGORIES order: read, edit, test, run, none.
# Hypothesize edits now and then (a debug print, an experiment), so the first
# edit after it straddles hypothesize and patch instead of flipping at once.
_EMISSIONS: Mapping[str, tuple[float, ...]] = MappingProxyType(
    {
        "explore": (0.62, 0.03, 0.03, 0.17, 0.15),
        "hypothesize": (0.35, 0.10, 0.04, 0.09, 0.42),
        "patch": (0.20, 0.66, 0.04, 0.05, 0.05),
        "verify": (0.08, 0.07, 0.55, 0.22, 0.08),
    }
)
DEFAULT_EMISSIONS: Final = _EMISSIONS
"""Emission rows of the default phases, by phase name."""

# Other names a configured phase may go by; their rows come from the default phase.
PHASE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "research": "explore",
        "investigate": "explore",
        "explore_code": "explore",
        "plan": "hypothesize",
        "planning": "hypothesize",
        "diagnose": "hypothesize",
        "think": "hypothesize",
        "implement": "patch",
        "code": "patch",
        "edit": "patch",
        "fix": "patch",
        "test": "verify",
        "validate": "verify",
        "review": "verify",
    }
)


@functools.lru_cache(maxsize=32)
def transition_matrix(phase_count: int, stickiness: float) -> FloatArray:
    """The row-stochastic transition matrix A over ``phase_count`` ordered phases.

    ``A[i, i] = stickiness``; the mass ``1 - stickiness`` that leaves phase i goes
    70% to phase i+1 for i < K-1, and from the last phase 60% back to K-2 and
    30% to phase 0; what remains is spread evenly over the other phases. The
    returned array is read-only and shared.
    """
    k = phase_count
    a = np.zeros((k, k))
    for i in range(k):
        if k == 1:
            a[i, i] = 1.0
            continue
        a[i] = _leaving_weights(i, k) * (1.0 - stickiness)
        a[i, i] = stickiness
    a.setflags(write=False)
    return a


def _leaving_weights(i: int, k: int) -> FloatArray:
    """Where the mass leaving phase i goes, as weights over j != i summing to 1."""
    w = np.zeros(k)
    favoured: dict[int, float] = (
        {i + 1: PROGRESSION_SHARE}
        if i < k - 1
        else {k - 2: LOOP_BACK_SHARE, 0: RESTART_SHARE}
        if k > 2
        else {0: 1.0}
    )
    for j, share in favoured.items():
        w[j] += share
    others = [j for j in range(k) if j != i and j not in favoured]
    rest = 1.0 - sum(favoured.values())
    for j in others:
        w[j] += rest / len(others)
    result: FloatArray = w / w.sum()
    return result


@functools.lru_cache(maxsize=32)
def emission_matrix(phases: tuple[str, ...]) -> FloatArray:
    """P(category | phase) as a K x 5 read-only array (rows sum to 1).

    Default phases (and their aliases) get their documented row; a phase name we
    know nothing about gets a uniform row, so only the transitions inform it.
    """
    uniform = (1.0 / len(CATEGORIES),) * len(CATEGORIES)
    rows = []
    for phase in phases:
        key = phase.strip().lower()
        rows.append(_EMISSIONS.get(PHASE_ALIASES.get(key, key), uniform))
    b = np.array(rows, dtype=np.float64)
    b /= b.sum(axis=1, keepdims=True)
    b.setflags(write=False)
    return b


def turn_likelihood(emissions: FloatArray, categories: Sequence[ToolCategory]) -> FloatArray:
    """P(this turn's evidence | phase) for each phase.

    A turn with several calls counts as one observation whose category is drawn
    from its calls (the mean of their columns), so a burst of parallel reads is
    not five times the evidence of one; no call at all is ``none``.
    """
    if not categories:
        return emissions[:, _COLUMN[ToolCategory.NONE]]
    if len(categories) == 1:
        return emissions[:, _COLUMN[categories[0]]]
    columns = [_COLUMN[c] for c in categories]
    result: FloatArray = emissions[:, columns].mean(axis=1)
    return result


_COLUMN: Final = {category: index for index, category in enumerate(CATEGORIES)}


def filter_step(belief: FloatArray, transitions: FloatArray, likelihood: FloatArray) -> FloatArray:
    """One forward-filter step: ``b' ∝ (b A) ⊙ L`` (predict, then update).

    When the evidence has zero likelihood under every phase the prediction is
    returned unchanged rather than a division by zero.
    """
    predicted = belief @ transitions
    posterior = predicted * likelihood
    total = float(posterior.sum())
    if not total > 0.0:
        return normalize(predicted)
    result: FloatArray = posterior / total
    return result


def normalize(weights: Sequence[float] | FloatArray) -> FloatArray:
    """Weights scaled to sum to 1; NaN, infinite and negative weights count as 0.

    All-zero weights give the uniform distribution.
    """
    w = np.asarray(weights, dtype=np.float64)
    w = np.where(np.isfinite(w) & (w > 0.0), w, 0.0)
    if len(w) == 0 or not float(w.max()) > 0.0:
        return np.full(len(w), 1.0 / max(len(w), 1))
    w = w / w.max()  # scale first: a sum of huge weights must not overflow
    result: FloatArray = w / w.sum()
    return result


def normalized_entropy(p: Sequence[float] | FloatArray) -> float:
    """Shannon entropy of ``p`` divided by ``log K``, in [0, 1]; 0.0 when K <= 1.

    ``p`` is normalised first; zero entries contribute nothing (0 log 0 = 0).
    """
    return entropy_of_distribution(normalize(p))


def transition_likelihood(p: Sequence[float] | FloatArray, transitions: FloatArray) -> float:
    """Probability that next turn's phase is not today's most likely phase.

    With ``c = argmax p`` and the one-step prediction ``p A``:
    ``1 - (p A)_c = 1 - sum_i p_i A[i, c]``, in [0, 1]. It is ``1 - A[c, c]``
    (0.15 by default) for a certain belief and grows as the mass on ``c``
    shrinks or sits on phases that rarely move into ``c``. ``p`` is normalised first.
    """
    return flip_probability(normalize(p), transitions)


def entropy_of_distribution(q: FloatArray) -> float:
    """:func:`normalized_entropy` of a vector already known to be a distribution."""
    k = len(q)
    if k <= 1:
        return 0.0
    nz = q[q > 0.0]
    h = -float(np.dot(nz, np.log(nz)))
    return min(1.0, max(0.0, h / math.log(k)))


def flip_probability(q: FloatArray, transitions: FloatArray) -> float:
    """:func:`transition_likelihood` of a vector already known to be a distribution."""
    c = int(np.argmax(q))
    stay = float(np.dot(q, transitions[:, c]))
    return min(1.0, max(0.0, 1.0 - stay))


Floats = tuple[float, ...]
"""A distribution or likelihood over the phases as plain floats (the filter's hot form)."""

_StepKey = tuple[bytes, tuple[ToolCategory, ...]]
"""A filter step's memo key: the packed belief and the turn's evidence."""
_MAX_CACHED_EVIDENCE = 256
_MAX_CACHED_STEPS = 1024


class FilterTables:
    """The transition and emission matrices as tuples of floats, for the per-turn filter.

    Built once per (phases, stickiness) by :func:`filter_tables` and shared
    read-only by every tracker with those settings. Its methods are the pure
    functions of this module on ``Floats`` instead of arrays, with the same
    results to rounding; :meth:`estimate` gathers those a tracker reports.
    """

    __slots__ = (
        "_columns",
        "_emission_columns",
        "_evidence",
        "_log_k",
        "_steps",
        "codec",
        "columns",
        "emissions",
        "k",
        "phases",
        "transitions",
        "uniform",
    )

    def __init__(self, phases: tuple[str, ...], stickiness: float) -> None:
        self.phases = phases
        self.transitions = transitions = transition_matrix(len(phases), stickiness)
        self.emissions = emissions = emission_matrix(phases)
        self.k = len(phases)
        # Column j of A: the one-step prediction (b A)_j is sum_i b_i A[i, j].
        self._columns: tuple[Floats, ...] = tuple(
            tuple(float(x) for x in transitions[:, j]) for j in range(self.k)
        )
        self.columns = self._columns
        """Column j of A as floats: ``sum(p_i * columns[j][i])`` is ``(p A)_j``."""
        self._emission_columns: dict[ToolCategory, Floats] = {
            category: tuple(float(x) for x in emissions[:, index])
            for category, index in _COLUMN.items()
        }
        self._evidence: BoundedMap[tuple[ToolCategory, ...], Floats] = BoundedMap(
            _MAX_CACHED_EVIDENCE
        )
        self._steps: BoundedMap[_StepKey, tuple[bytes, PhaseEstimate]] = BoundedMap(
            _MAX_CACHED_STEPS
        )
        self._log_k = math.log(self.k) if self.k > 1 else 0.0
        self.uniform: Floats = (1.0 / self.k,) * self.k
        # A distribution as k native float64s in bytes, the trackers' form: exact,
        # smaller than an array('d') and quicker to pack and unpack.
        self.codec = struct.Struct(f"{self.k}d")

    def likelihood(self, categories: Sequence[ToolCategory]) -> Floats:
        """:func:`turn_likelihood` as floats (cached by evidence: few distinct turns recur)."""
        return self._evidence.cached(tuple(categories), self._mean_column)

    def _mean_column(self, categories: tuple[ToolCategory, ...]) -> Floats:
        if not categories:
            return self._emission_columns[ToolCategory.NONE]
        if len(categories) == 1:
            return self._emission_columns[categories[0]]
        columns = [self._emission_columns[c] for c in categories]
        n = len(columns)
        out = []
        for i in range(self.k):
            total = 0.0
            for column in columns:
                total += column[i]
            out.append(total / n)
        return tuple(out)

    def step(self, belief: Sequence[float], likelihood: Floats) -> Floats:
        """:func:`filter_step`: ``b' ∝ (b A) ⊙ L``; the prediction when L is zero everywhere."""
        mul = operator.mul
        predicted = [sum(map(mul, belief, column)) for column in self._columns]
        posterior = list(map(mul, predicted, likelihood))
        total = sum(posterior)
        if not total > 0.0:
            return normalize_floats(predicted)
        return tuple([x / total for x in posterior])

    def advance(
        self, packed: bytes, evidence: tuple[ToolCategory, ...]
    ) -> tuple[bytes, PhaseEstimate]:
        """One inferred step from a belief packed by :attr:`codec`: the next belief, packed,
        and its estimate.

        Memoized (bounded): the step is a pure function of the belief and the evidence,
        and both recur, since every conversation starts from the uniform belief, agents
        repeat their tools, and a belief under repeated evidence settles on a fixed point.
        The estimate is immutable and shared between the trackers that reach it.
        """
        return self._steps.cached((packed, evidence), self._advance)

    def _advance(self, key: _StepKey) -> tuple[bytes, PhaseEstimate]:
        packed, evidence = key
        belief = self.step(self.codec.unpack(packed), self.likelihood(evidence))
        return self.codec.pack(*belief), self.estimate(belief, PhaseSource.INFERRED)

    def estimate(self, q: Floats, source: PhaseSource) -> PhaseEstimate:
        """The estimate of the distribution ``q``: its most likely phase, entropy and flip.

        ``q`` is a distribution (finite, non-negative). The phase is the first
        most likely one on ties (as ``numpy.argmax``); the entropy is
        :func:`entropy_of_distribution` and the flip probability
        :func:`flip_probability`, on floats.
        """
        c = q.index(max(q))
        entropy = 0.0
        if self.k > 1:
            h: float
            try:  # the filter's beliefs have no zero
                h = -sum(map(operator.mul, q, map(math.log, q)))
            except ValueError:  # log(0): 0 log 0 counts as 0
                h = -sum([x * math.log(x) for x in q if x > 0.0])
            entropy = clip01(h / self._log_k)
        flip = clip01(1.0 - sum(map(operator.mul, q, self._columns[c])))
        return PhaseEstimate(self.phases[c], q[c], entropy, flip, source, q, self.phases)


@functools.lru_cache(maxsize=32)
def filter_tables(phases: tuple[str, ...], stickiness: float) -> FilterTables:
    """The shared :class:`FilterTables` of ``phases`` with ``stickiness``."""
    return FilterTables(phases, stickiness)


def normalize_floats(weights: Sequence[float]) -> Floats:
    """:func:`normalize` returning floats: NaN, infinite and negative weights count as 0."""
    w = [float(x) if math.isfinite(x) and x > 0.0 else 0.0 for x in weights]
    top = max(w, default=0.0)
    if not top > 0.0:
        return (1.0 / max(len(w), 1),) * len(w)
    w = [x / top for x in w]  # scale first: a sum of huge weights must not overflow
    total = sum(w)
    return tuple([x / total for x in w])
