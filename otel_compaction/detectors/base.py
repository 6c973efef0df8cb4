"""The one interface every detector implements, and the loop that runs them.

A detector looks at one compaction in the state it fired in and returns a
``Finding`` or None, like the tail-sampling processor's ``PolicyEvaluator``
looks at one trace. Detectors are pure: same context, same answer; they keep
no state of their own (the history they need is in the context).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from otel_compaction.config import Settings
from otel_compaction.model import CompactionRecord, Finding, PhaseEstimate, Pressure
from otel_compaction.semconv import CompactionSource, FindingKind

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FiredAt:
    """The token fraction a compaction fired at, and the measured one when estimated."""

    fraction: float
    measured: float | None = None
    """The last call's fraction when ``fraction`` adds a turn summarized unsent; None when
    ``fraction`` is measured."""

    def text(self) -> str:
        """'token fraction 0.72' or 'token fraction about 0.72 (0.63 at the last call, plus
        a turn's growth summarized unsent)'."""
        if self.measured is None:
            return f"token fraction {self.fraction:.2f}"
        return (
            f"token fraction about {self.fraction:.2f} ({self.measured:.2f} at the last "
            f"call, plus a turn's growth summarized unsent)"
        )


@dataclass(frozen=True, slots=True)
class DetectionContext:
    """One compaction and the conversation state it fired in.

    Args:
        record: the compaction, with its lineage and cycle.
        settings: the thresholds.
        history: the conversation's earlier compactions, oldest first (bounded).
        pressure: the pressure after the last turn before the compaction.
        phase: the phase at the moment of the compaction: the estimate after the
            last turn before it, including any phase report made since.
        compacted_tokens: size of the compacted region when known (None: unknown).
        floor_tokens: the smallest context of any turn before the compaction (the
            conversation's fixed part is at most this); None before any turn.
        fixed_tokens: the system prompt and tool definitions of the last turn, in
            tokens, when the source knows them.
        run_turns: the turns of the whole run once it has ended (the end of a
            transcript, of the instrumentation); None while it runs. The rules judged at
            the run's end (``needs_run_end``) need it.
    """

    record: CompactionRecord
    settings: Settings
    history: tuple[CompactionRecord, ...] = ()
    pressure: Pressure | None = None
    phase: PhaseEstimate | None = None
    compacted_tokens: int | None = None
    floor_tokens: int | None = None
    fixed_tokens: int | None = None
    run_turns: int | None = None

    @property
    def run(self) -> tuple[CompactionRecord, ...]:
        """The conversation's compactions up to and including this one, oldest first."""
        return (*self.history, self.record)

    def fired_at(self) -> FiredAt | None:
        """The token fraction the compaction fired at; None when no size is known.

        The compaction's ``tokens_before / window``, else the last turn's fraction.
        An inferred rewrite whose request brings nothing new since the last call (no
        verbatim tail, or one of old messages only) was decided on a context no call
        carried: the last reply and what it brought back (a tool's output) went into
        the summary unsent, so the size measured is the last call's, a turn short of
        the agent's own count. One turn of the cycle's growth
        (``CompactionRecord.growth_per_turn``) then stands in for the turn summarized
        unsent (docs/detectors.md#the-size-a-compaction-fired-at).
        """
        record, pressure = self.record, self.pressure
        measured = record.token_fraction
        if measured is None:
            return None if pressure is None else FiredAt(pressure.token_fraction, None)
        growth, window = record.growth_per_turn, record.window
        if (
            record.source is not CompactionSource.INFERRED
            or pressure is None
            or record.tokens_before != pressure.context_tokens
            or growth is None
            or growth <= 0
            or not window
        ):
            return FiredAt(measured, None)
        return FiredAt(measured + growth / window, measured)

    def finding(self, kind: FindingKind, rule: str, reason: str) -> Finding:
        """A finding about this context's compaction."""
        return Finding(
            kind=kind,
            conversation_id=self.record.conversation_id,
            compaction_id=self.record.compaction_id,
            turn=self.record.turn_index,
            reason=reason,
            rule=rule,
        )


class Detector(Protocol):
    """Decides whether one compaction shows one kind of problem.

    ``evaluate`` must be pure and cheap (it runs in the agent's process on every
    compaction) and should not raise; ``run_detectors`` still guards it. A
    detector with ``needs_size_after = True`` is run once the compaction is
    settled (its ``tokens_after``, the next call's context, is known): at once
    when the observation brought it, else on the next turn. A detector with
    ``needs_run_end = True`` judges the conversation's first compaction once more
    when the run has ended (``DetectionContext.run_turns`` set); while the run goes
    on it must return None.
    """

    @property
    def kind(self) -> FindingKind:
        """The kind of finding this detector raises."""
        ...

    def evaluate(self, ctx: DetectionContext) -> Finding | None:
        """The finding about ``ctx.record``, or None when there is nothing to report."""
        ...


@dataclass(frozen=True, slots=True)
class RuleDetector:
    """A detector made of a pure function ``rule(ctx) -> Finding | None``."""

    kind: FindingKind
    rule: Callable[[DetectionContext], Finding | None]
    needs_size_after: bool = False
    needs_run_end: bool = False

    def evaluate(self, ctx: DetectionContext) -> Finding | None:
        """Apply the rule."""
        return self.rule(ctx)


def needs_size_after(detector: Detector) -> bool:
    """Whether ``detector`` judges a compaction only once it is settled."""
    return bool(getattr(detector, "needs_size_after", False))


def needs_run_end(detector: Detector) -> bool:
    """Whether ``detector`` judges a compaction only once the run has ended."""
    return bool(getattr(detector, "needs_run_end", False))


def run_detectors(
    ctx: DetectionContext,
    detectors: Iterable[Detector],
    *,
    exclude: frozenset[FindingKind] = frozenset(),
) -> tuple[Finding, ...]:
    """Every finding the detectors raise about ``ctx``, in detector order.

    Kinds in ``exclude`` (already found on this compaction) are not raised again.
    A detector that raises is logged and skipped: a faulty rule must never break
    the agent it observes.
    """
    findings: list[Finding] = []
    seen = set(exclude)
    for detector in detectors:
        if detector.kind in seen:
            continue
        try:
            found = detector.evaluate(ctx)
        except Exception:  # a faulty detector must not break the host
            logger.exception("detector %s failed; skipped", detector.kind.value)
            continue
        if found is not None:
            findings.append(found)
            seen.add(found.kind)
    return tuple(findings)
