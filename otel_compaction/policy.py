"""The decision API, for agents that want to act on the signals, not only watch them.

Two checks (docs/concepts.md#boundary-compaction and #re-expansion-livelock), and an
advisor that combines them
with the conversation's live state::

    RuntimeError
     ├── PhaseBoundaryCompactionError   should_compact(): lossy compaction vetoed
     └── CompactionReexpansionError     check_compaction_health(): livelock

Usage::

    try:
        if should_compact(tf, decay, transition_likelihood):
            context = context.lossy_summarize()
    except PhaseBoundaryCompactionError:
        context = context.extractive_summarize(preserve_tail_turns=8)

    advice = advise()  # the current conversation of the instrumented agent
    if advice.action is AdviceAction.RESET_LINEAGE: ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from otel_compaction.config import Settings
from otel_compaction.detectors.cadence import cadence_verdict, format_numbers
from otel_compaction.detectors.veto import VetoVerdict, settings_verdict, veto_verdict
from otel_compaction.model import PhaseEstimate
from otel_compaction.semconv import AdviceAction, ErrorStage

if TYPE_CHECKING:
    from otel_compaction.engine import ConversationAnalyzer

__all__ = [
    "Advice",
    "AdvisorState",
    "CompactionAdvisor",
    "CompactionReexpansionError",
    "PhaseBoundaryCompactionError",
    "advise",
    "advise_conversation",
    "check_compaction_health",
    "should_compact",
]

_DEFAULTS = Settings.model_validate({})
"""The thresholds' defaults: ``Settings``', the detector's (never the environment's)."""
DEFAULT_STUCK_TURNS = 12
"""Turns in one phase, under tool-output pressure, after which the advisor calls it stuck."""


class PhaseBoundaryCompactionError(RuntimeError):
    """A lossy compaction was attempted while the phase was about to flip.

    Why that is refused: docs/concepts.md#boundary-compaction.
    """

    def __init__(
        self, message: str, *, token_fraction: float, transition_likelihood: float
    ) -> None:
        super().__init__(message)
        self.token_fraction = token_fraction
        self.transition_likelihood = transition_likelihood


class CompactionReexpansionError(RuntimeError):
    """Compaction cadence accelerates under flat task load: summaries re-expand.

    Why that means re-expansion: docs/concepts.md#re-expansion-livelock.
    """

    def __init__(self, message: str, *, intervals: tuple[float, ...], spread: float) -> None:
        super().__init__(message)
        self.intervals = intervals
        self.spread = spread


def should_compact(
    token_fraction: float,
    attention_decay_sum: float,
    phase_transition_likelihood: float,
    *,
    hard_ceiling: float = _DEFAULTS.hard_ceiling,
    pressure_threshold: float = _DEFAULTS.pressure_threshold,
    transition_veto: float = _DEFAULTS.transition_veto,
) -> bool:
    """Whether to compact now; pressure is the cause, a likely phase flip vetoes.

    Returns True at or above ``hard_ceiling`` whatever the phase (the caller must
    then compact extractively), False when neither pressure signal reaches
    ``pressure_threshold`` (or the pressure is NaN, unknown), True otherwise
    unless the veto holds. The rule and the defaults are those of the
    ``boundary_compaction`` detector (:mod:`otel_compaction.detectors.veto`,
    ``Settings``): a lossy compaction this refuses is one the detector flags.

    Raises:
        PhaseBoundaryCompactionError: pressure is due but
            ``phase_transition_likelihood > transition_veto``: refuse lossy
            compaction; compact extractively or defer.
    """
    verdict = veto_verdict(
        token_fraction,
        attention_decay_sum,
        phase_transition_likelihood,
        pressure_threshold=pressure_threshold,
        transition_veto=transition_veto,
        hard_ceiling=hard_ceiling,
    )
    if verdict.refuses_lossy:
        raise PhaseBoundaryCompactionError(
            f"lossy compaction vetoed at phase boundary "
            f"(transition_likelihood={phase_transition_likelihood:.2f} > {transition_veto:.2f}, "
            f"token_fraction={token_fraction:.2f}, attention_decay={attention_decay_sum:.2f}); "
            f"use extractive compaction or defer",
            token_fraction=token_fraction,
            transition_likelihood=phase_transition_likelihood,
        )
    return verdict.due


def check_compaction_health(
    interval_lengths: Sequence[int],
    new_content_per_turn: Sequence[int],
    shrink_threshold: float = 0.20,
    content_stability: float = 0.15,
) -> None:
    """Raise when the compaction cadence accelerates while the task load is flat.

    Args:
        interval_lengths: turns between successive compactions, oldest first.
            Fewer than four never raise.
        new_content_per_turn: new task tokens per turn over the same span; an
            empty sequence cannot show a flat load and never raises.
        shrink_threshold: each of the last three shrinks must exceed it (strictly).
        content_stability: largest ``(max - min) / mean`` that counts as flat.

    Raises:
        CompactionReexpansionError: the budget pressure is compaction-induced.
    """
    verdict = cadence_verdict(
        interval_lengths,
        new_content_per_turn,
        shrink_threshold=shrink_threshold,
        content_stability=content_stability,
    )
    if verdict is None or not verdict.livelock:
        return
    raise CompactionReexpansionError(
        f"Compaction cadence accelerating ({format_numbers(verdict.recent)}) while task "
        f"load is flat (spread {verdict.spread:.2f}). Budget pressure is "
        f"compaction-induced; reset compaction lineage and pin constraints outside "
        f"the compacted region.",
        intervals=verdict.recent,
        spread=verdict.spread,
    )


@dataclass(frozen=True, slots=True)
class Advice:
    """What to do about compaction now, and why.

    ``preserve_tail_turns`` is set for ``compact_extractive``: keep that many of
    the latest turns verbatim and summarize only what is older.
    """

    action: AdviceAction
    reason: str
    preserve_tail_turns: int | None = None


@dataclass(frozen=True, slots=True)
class AdvisorState:
    """The live state of one conversation that the advisor decides on.

    Args:
        token_fraction / attention_decay: the latest pressure.
        phase: the current phase estimate, None when unknown.
        turn_index: turns so far.
        phase_turns: how many turns the current phase has lasted.
        livelocked: whether the conversation is in re-expansion livelock.
    """

    token_fraction: float
    attention_decay: float = 0.0
    phase: PhaseEstimate | None = None
    turn_index: int = 0
    phase_turns: int = 0
    livelocked: bool = False

    @classmethod
    def from_analyzer(cls, analyzer: ConversationAnalyzer) -> AdvisorState:
        """The state of a live conversation."""
        pressure = analyzer.pressure
        return cls(
            token_fraction=pressure.token_fraction if pressure else 0.0,
            attention_decay=pressure.attention_decay if pressure else 0.0,
            phase=analyzer.phase,
            turn_index=analyzer.turn_index,
            phase_turns=analyzer.phase_turns,
            livelocked=analyzer.livelocked,
        )


class CompactionAdvisor:
    """Answers "what should I do about compaction now?" for one conversation state.

    The rules, first match wins (settings names in parentheses; the reasons for each are
    in docs/concepts.md, sections by rule):

    1. in re-expansion livelock: ``reset_lineage`` (re-summarize from raw retained
       turns only and pin constraints outside the compacted region);
    2. token fraction at or above the ceiling (``hard_ceiling``):
       ``compact_extractive``, keeping the last ``extractive_tail_turns`` turns,
       whatever the phase;
    3. neither token fraction nor attention decay reaches ``pressure_threshold``:
       ``continue``;
    4. fewer than ``short_run_turns`` turns so far and the token fraction below
       ``pressure_threshold`` (the pressure is the tool outputs' alone):
       ``prune_tool_outputs`` (a summary of a small history costs more than the
       history it replaces, and the ``short_run_compaction`` rule would flag it if
       the run ended short). At pressure the short-run reasoning does not hold: a
       large history is worth summarizing however young the run, and the phase
       rules decide;
    5. the phase is about to flip (transition likelihood > ``transition_veto``):
       ``defer`` until it settles (the veto);
    6. stuck: the same phase for ``stuck_turns`` turns or more while attention
       decay reaches ``pressure_threshold`` (tool outputs dominate):
       ``prune_tool_outputs`` only, keeping every reasoning turn;
    7. the phase is unknown: ``compact_extractive`` (a boundary cannot be ruled out);
    8. otherwise ``compact``: the phase is stable, summarize the closed work.
    """

    __slots__ = ("_settings", "_stuck_turns")

    def __init__(self, settings: Settings | None = None, *, stuck_turns: int = DEFAULT_STUCK_TURNS):
        self._settings = settings or Settings.from_env()
        self._stuck_turns = stuck_turns

    def advise(self, state: AdvisorState) -> Advice:
        """The advice for ``state``, with a reason that carries the numbers."""
        s = self._settings
        tf, ad = state.token_fraction, state.attention_decay
        tail = s.extractive_tail_turns
        phase = state.phase
        verdict = settings_verdict(tf, ad, phase.transition_likelihood if phase else 0.0, s)
        if state.livelocked:
            return Advice(AdviceAction.RESET_LINEAGE, _LIVELOCK)
        if verdict.at_ceiling:
            reason = (
                f"token fraction {tf:.2f} >= hard ceiling {s.hard_ceiling:.2f}: compact now, "
                f"extractively, keeping the last {tail} turns verbatim"
            )
            return Advice(AdviceAction.COMPACT_EXTRACTIVE, reason, tail)
        if not verdict.due:
            reason = (
                f"no pressure: token fraction {tf:.2f} and attention decay {ad:.2f} "
                f"< {s.pressure_threshold:.2f}"
            )
            return Advice(AdviceAction.CONTINUE, reason)
        if state.turn_index < s.short_run_turns and not tf >= s.pressure_threshold:
            reason = (
                f"short run: {state.turn_index} turns < {s.short_run_turns} with token "
                f"fraction {tf:.2f} < {s.pressure_threshold:.2f}: a summary would cost more "
                f"than the history it replaces; tool outputs weigh {ad:.2f} of the window: "
                f"prune old tool outputs only"
            )
            return Advice(AdviceAction.PRUNE_TOOL_OUTPUTS, reason)
        return self._phase_advice(state, verdict)

    def _phase_advice(self, state: AdvisorState, verdict: VetoVerdict) -> Advice:
        """Rules 5 to 8: pressure is due; the phase decides how (or whether) to compact."""
        s, phase = self._settings, state.phase
        pressure = f"token fraction {state.token_fraction:.2f}"
        tail = s.extractive_tail_turns
        if phase is not None and verdict.refuses_lossy:
            reason = (
                f"{pressure} is due, but the phase is about to flip (transition likelihood "
                f"{phase.transition_likelihood:.2f} > {s.transition_veto:.2f}, {phase.name} "
                f"{phase.confidence:.2f}): defer lossy compaction until it settles"
            )
            return Advice(AdviceAction.DEFER, reason)
        decay = state.attention_decay
        if state.phase_turns >= self._stuck_turns and decay >= s.pressure_threshold:
            name = phase.name if phase is not None else "one phase"
            reason = (
                f"stuck: {state.phase_turns} turns in {name} while recent tool outputs weigh "
                f"{decay:.2f} of the window: prune old tool outputs only, keep the reasoning"
            )
            return Advice(AdviceAction.PRUNE_TOOL_OUTPUTS, reason)
        if phase is None:
            reason = (
                f"{pressure} is due and the phase is unknown: compact extractively, "
                f"keeping the last {tail} turns verbatim"
            )
            return Advice(AdviceAction.COMPACT_EXTRACTIVE, reason, tail)
        reason = (
            f"{pressure} is due and the phase is stable ({phase.name} {phase.confidence:.2f}, "
            f"transition likelihood {phase.transition_likelihood:.2f} <= "
            f"{s.transition_veto:.2f}): compact the closed work"
        )
        return Advice(AdviceAction.COMPACT, reason)


_LIVELOCK = (
    "re-expansion livelock: each compaction buys fewer turns than the last; reset the "
    "compaction lineage (re-summarize from raw retained turns, dropping the prior summary) "
    "and pin task constraints outside the compacted region"
)


def advise_conversation(
    analyzer: ConversationAnalyzer, advisor: CompactionAdvisor | None = None
) -> Advice:
    """The advice for a live conversation (its analyzer's settings by default)."""
    advisor = advisor or CompactionAdvisor(analyzer.settings)
    return advisor.advise(AdvisorState.from_analyzer(analyzer))


def advise(conversation_id: str | None = None) -> Advice:
    """The advice for the agent's current conversation, now, in its own process.

    The conversation is ``conversation_id``; else the one named around the call
    (a ``conversation()`` block, the LangChain thread, baggage); else the one of
    the latest instrumented LLM call made in this context (thread or task), so
    an agent whose conversations are inferred can ask right after a call. A
    :class:`~otel_compaction.Finding` names its conversation too:
    ``advise(finding.conversation_id)``. Never raises: with no conversation seen
    yet, or on an internal error, the advice is ``continue`` with that reason.
    """
    from otel_compaction.instrument import _runtime
    from otel_compaction.instrument import _scope as scope

    with _runtime.guard().stage(ErrorStage.ADVICE):
        ref = scope.given_conversation(conversation_id)
        cid = ref.id if ref is not None else scope.last_conversation()
        runtime = _runtime.current()
        analyzer = runtime.registry.peek(cid) if runtime is not None and cid else None
        if analyzer is None:
            name = f"conversation {cid!r}" if cid else "this context"
            return Advice(AdviceAction.CONTINUE, f"no instrumented LLM call seen in {name} yet")
        return advise_conversation(analyzer)
    return Advice(AdviceAction.CONTINUE, "no advice: internal error (logged)")
