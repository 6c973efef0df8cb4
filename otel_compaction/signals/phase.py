"""The phase of one conversation: reported by the agent or inferred from its tool calls.

:class:`PhaseTracker` runs the forward filter of the hidden Markov model in
:mod:`~otel_compaction.signals.phase_model` once per turn, and takes the
agent's own reports (:class:`~otel_compaction.model.PhaseReport`) as the belief
whenever they come. Per turn it costs one 4x4 matrix-vector product and a few
vector operations, done on plain floats with the tables of
:class:`~otel_compaction.signals.phase_model.FilterTables`, shared by every
tracker with the same settings; a tracker itself holds little more than its belief.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from otel_compaction._once import OncePerKey
from otel_compaction.config import Settings
from otel_compaction.model import PhaseEstimate, PhaseReport, PhaseTransition
from otel_compaction.semconv import PhaseSource
from otel_compaction.signals.phase_model import (
    FilterTables,
    FloatArray,
    Floats,
    filter_tables,
    normalize_floats,
)
from otel_compaction.signals.pressure import clip01
from otel_compaction.signals.tools import ToolCategorizer, ToolCategory

logger = logging.getLogger(__name__)

DEFAULT_REPORTED_CONFIDENCE = 0.9
"""Confidence given to a report that names a phase without a confidence or distribution.

A bare name is an assertion without calibration; 0.9 keeps its transition
likelihood well under the default veto (about 0.23) while leaving the filter
room to move on the next turns' evidence.
"""

MAX_WARNED_PHASES = 64
_warned_phases = OncePerKey(MAX_WARNED_PHASES)


def reported_distribution(report: PhaseReport, phases: Sequence[str]) -> FloatArray | None:
    """The belief a report stands for, aligned with ``phases``; ``None`` if it names no phase.

    A full ``distribution`` is normalised (names outside ``phases``, negative
    and NaN values are dropped); otherwise ``report.name`` gets ``confidence``
    (clipped to [0, 1], NaN as 0; :data:`DEFAULT_REPORTED_CONFIDENCE` when absent) and the
    rest is spread evenly over the other phases.
    """
    belief = reported_floats(report, phases)
    return None if belief is None else np.array(belief, dtype=np.float64)


def reported_floats(report: PhaseReport, phases: Sequence[str]) -> Floats | None:
    """:func:`reported_distribution` as a tuple of floats (the tracker's form)."""
    if report.distribution:
        weights = [_finite(report.distribution.get(name, 0.0)) for name in phases]
        if sum(weights) > 0.0:
            return normalize_floats(weights)
    if report.name not in phases:
        return None
    k = len(phases)
    if k == 1:
        return (1.0,)
    conf = DEFAULT_REPORTED_CONFIDENCE if report.confidence is None else report.confidence
    conf = 0.0 if math.isnan(conf) else float(min(1.0, max(0.0, conf)))
    rest = (1.0 - conf) / (k - 1)
    named = list(phases).index(report.name)
    return tuple([conf if i == named else rest for i in range(k)])


def _finite(value: float) -> float:
    return value if isinstance(value, int | float) and math.isfinite(value) and value > 0 else 0.0


class PhaseTracker:
    """The phase of one conversation, turn by turn.

    Call :meth:`report` whenever the agent states its phase and
    :meth:`observe_turn` once per turn. A report made since the previous turn
    is that turn's estimate (``source=reported``, no tool evidence applied);
    otherwise the turn's tool calls update the filtered belief
    (``source=inferred``). After each turn, :attr:`last_transition` holds the
    change of the most likely phase first seen on that turn, or ``None``.

    Ignorance is not imminence. The phase is *unknown* (``known=False``) until
    ``phase_min_evidence_turns`` turns with tool calls, or a report, have been
    seen. Once known, the transition likelihood is measured against the *held*
    phase: the last one whose probability reached ``phase_hold_confidence``,
    within the last ``phase_hold_turns`` turns. It is the probability, under the
    model's one-step prediction, that the next turn is not in the held phase,
    ``1 - (p A)_held``; without a held phase it is the model's base rate of
    change, ``1 - A[c, c]``. So it rises above that only while a phase held with
    confidence is losing its probability to another (``docs/signals.md``).

    Not thread-safe: one tracker belongs to one conversation.
    """

    # The estimate is not kept: it is a pure function of the belief and its
    # source, rebuilt on demand, so an idle conversation holds only the belief,
    # as float64s packed in bytes (``FilterTables.codec``: about 70 bytes for four
    # phases, where an ``array('d')`` takes 112 and a tuple of floats 170).
    __slots__ = (
        "_belief",
        "_categorize",
        "_evidence",
        "_held",
        "_held_turn",
        "_last_name",
        "_last_transition",
        "_pending_report",
        "_rules",
        "_source",
        "_tables",
        "_turns",
    )

    STATE_FIELDS: ClassVar = (
        "belief",
        "evidence",
        "held",
        "held_turn",
        "last_name",
        "last_transition",
        "pending_report",
        "source",
        "turns",
    )
    """The names of :meth:`state`'s values (tables, categorizer and rules are the settings')."""

    def __init__(self, settings: Settings) -> None:
        self._tables: FilterTables = filter_tables(
            tuple(settings.phases), settings.phase_stickiness
        )
        self._categorize = shared_categorizer(tuple(settings.tool_categories.items()))
        self._belief = self._tables.codec.pack(*self._tables.uniform)
        self._source = PhaseSource.INFERRED
        self._pending_report = False
        self._last_name: str | None = None
        self._last_transition: PhaseTransition | None = None
        self._turns = 0
        self._rules = _hold_rules(
            settings.phase_min_evidence_turns,
            settings.phase_hold_confidence,
            settings.phase_hold_reported_confidence,
            settings.phase_hold_turns,
        )
        # Turns with tool calls seen, counted up to the minimum (a report makes it known).
        self._evidence = 0
        self._held = -1  # index of the held phase, -1 for none
        self._held_turn = 0

    def state(self) -> dict[str, Any]:
        """What the tracker knows, as plain values: :meth:`restore` takes it."""
        return {name: getattr(self, "_" + name) for name in self.STATE_FIELDS}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take what :meth:`state` returned (of a tracker built with the same settings)."""
        for name in self.STATE_FIELDS:
            setattr(self, "_" + name, state[name])

    @property
    def known(self) -> bool:
        """Whether enough evidence has been seen for any phase (see the class docstring)."""
        return self._evidence >= self._rules.min_evidence

    @property
    def phases(self) -> tuple[str, ...]:
        """The phase labels, in the order of every distribution."""
        return self._tables.phases

    @property
    def current(self) -> PhaseEstimate:
        """The latest estimate, a report made after the last turn included (uniform at first)."""
        turn = self._turns + 1 if self._pending_report else self._turns
        return self._judge(self._estimate(), turn, keep=False)

    @property
    def last_transition(self) -> PhaseTransition | None:
        """The phase change first seen on the most recent turn, if any."""
        return self._last_transition

    @property
    def transitions(self) -> FloatArray:
        """The transition matrix A (read-only)."""
        return self._tables.transitions

    def report(self, report: PhaseReport) -> PhaseEstimate:
        """Take the agent's report as the belief; it is the next turn's estimate.

        A report naming no configured phase logs one warning and is ignored
        (the current estimate is returned unchanged).
        """
        belief = reported_floats(report, self._tables.phases)
        if belief is None:
            _warn_unknown_phase(report.name, self._tables.phases)
            return self.current
        self._belief = self._tables.codec.pack(*belief)
        self._pending_report = True
        self._source = PhaseSource.REPORTED
        self._evidence = max(self._evidence, self._rules.min_evidence)
        return self._judge(self._estimate(belief), self._turns + 1, keep=False)

    def observe_turn(
        self,
        tool_calls: Sequence[str],
        arguments: Sequence[str | None] | None = None,
        turn_index: int | None = None,
    ) -> PhaseEstimate:
        """Advance one turn with the tool calls its response asked for.

        Args:
            tool_calls: tool names, in the order the response gave them.
            arguments: each call's arguments (JSON text) where known, aligned
                with ``tool_calls``; used for shell and editor tools.
            turn_index: the analyzer's turn number, for :attr:`last_transition`;
                this tracker counts turns itself when it is omitted.
        """
        return self.observe_categories(self.categories(tool_calls, arguments), turn_index)

    def observe_categories(
        self, evidence: Sequence[ToolCategory], turn_index: int | None = None
    ) -> PhaseEstimate:
        """Advance one turn whose tool calls are already categorised (see :meth:`observe_turn`)."""
        self._turns = self._turns + 1 if turn_index is None else turn_index
        if self._pending_report:
            self._pending_report = False
            estimate = self._estimate()
        else:
            self._belief, estimate = self._tables.advance(self._belief, tuple(evidence))
            self._source = PhaseSource.INFERRED
            if evidence and self._evidence < self._rules.min_evidence:
                self._evidence += 1
        estimate = self._judge(estimate, self._turns, keep=True)
        if not estimate.known:
            self._last_transition = None
            return estimate
        name = estimate.name
        previous, self._last_name = self._last_name, name
        if previous is None or previous == name:
            self._last_transition = None
        else:
            self._last_transition = PhaseTransition(
                from_phase=previous,
                to_phase=name,
                turn_index=self._turns,
                transition_likelihood=estimate.transition_likelihood,
            )
        return estimate

    def categories(
        self, tool_calls: Sequence[str], arguments: Sequence[str | None] | None = None
    ) -> tuple[ToolCategory, ...]:
        """The category of each call (empty for a turn without tool calls)."""
        if not arguments:
            return tuple(map(self._categorize, tool_calls))
        missing = len(tool_calls) - len(arguments)
        if missing > 0:
            arguments = (*arguments, *(None,) * missing)
        return tuple(map(self._categorize, tool_calls, arguments))

    def _estimate(self, belief: Floats | None = None) -> PhaseEstimate:
        """The model's estimate of ``belief`` (the stored belief when omitted)."""
        tables = self._tables
        p = tables.codec.unpack(self._belief) if belief is None else belief
        return tables.estimate(p, self._source)

    def _judge(self, estimate: PhaseEstimate, turn: int, *, keep: bool) -> PhaseEstimate:
        """``estimate`` with its knownness and its transition likelihood against the held phase.

        ``keep``: remember the held phase this turn leaves (a turn); a look at the
        current estimate or a report's return value only reads it.
        """
        rules = self._rules
        if self._evidence < rules.min_evidence:
            return dataclasses.replace(estimate, transition_likelihood=0.0, known=False)
        q = estimate.distribution
        top = q.index(estimate.confidence)
        held, held_turn = self._held, self._held_turn
        hold = (
            rules.hold_reported
            if estimate.source is PhaseSource.REPORTED
            else rules.hold_confidence
        )
        if estimate.confidence >= hold:
            held, held_turn = top, turn
        elif held >= 0 and turn - held_turn > rules.hold_turns:
            held = -1  # the change ended without a new phase taking hold
        if keep:
            self._held, self._held_turn = held, held_turn
        if held < 0:
            # No phase held: no evidence of change, the model's base rate.
            return dataclasses.replace(
                estimate, transition_likelihood=1.0 - self._tables.columns[top][top]
            )
        likelihood = estimate.transition_likelihood  # the flip of the held phase itself
        if held != top:
            likelihood = clip01(1.0 - sum(map(operator.mul, q, self._tables.columns[held])))
        return dataclasses.replace(
            estimate,
            transition_likelihood=likelihood,
            held_phase=self._tables.phases[held],
            held_turn=held_turn,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _HoldRules:
    """The settings that decide whether a phase is known and which one is held."""

    min_evidence: int
    hold_confidence: float
    hold_reported: float
    hold_turns: int


@functools.lru_cache(maxsize=16)
def _hold_rules(
    min_evidence: int, hold_confidence: float, hold_reported: float, hold_turns: int
) -> _HoldRules:
    """One :class:`_HoldRules` per setting, shared by the trackers."""
    return _HoldRules(min_evidence, hold_confidence, hold_reported, hold_turns)


@functools.lru_cache(maxsize=16)
def shared_categorizer(overrides: tuple[tuple[str, str], ...]) -> ToolCategorizer:
    """One :class:`ToolCategorizer` (and name cache) per set of overrides, shared by trackers."""
    return ToolCategorizer(dict(overrides))


def _warn_unknown_phase(name: str, phases: Sequence[str]) -> None:
    if not _warned_phases.claim(name):
        return
    logger.warning(
        "ignoring reported phase %r: not one of the configured phases (%s)",
        name,
        ", ".join(phases),
    )
