"""Boundary compaction: a summarizing compaction fired while a held phase was giving way.

Pressure causes compaction; the phase-transition likelihood vetoes compaction
that loses evidence. With ``tf`` the token fraction the compaction fired at
(``DetectionContext.fired_at``: measured, or a turn more when the summary took a turn
no call carried), ``ad`` the attention decay after the last turn before it, ``tl``
the transition likelihood at that moment:

- rule ``ceiling``: ``tf >= hard_ceiling`` and ``tl > transition_veto``: compaction
  had to happen, but it had to keep the evidence (extractive);
- rule ``veto``: ``tf >= pressure_threshold or ad >= pressure_threshold`` and
  ``tl > transition_veto``: the veto held, the compaction should have been
  extractive or deferred.

The numbers are the rule ``policy.should_compact`` applies, in one place
(:mod:`~otel_compaction.detectors.veto`): a lossy compaction is flagged exactly
where the policy refuses it (``veto``) or allows only an extractive one with the
phase about to flip (``ceiling``).

Judged: every compaction that summarizes, whoever wrote the summary (``lossy``
client compactions, provider-side ``server`` compactions, imported ones);
``boundary_scope="client_lossy"`` narrows it to the client's own lossy
compactions. Never judged: ``extractive`` and ``prune`` compactions, a phase
that is unknown (too little evidence yet) and an unknown pressure. The remedy
in the reason follows what fired the compaction. The rationale is on the
concepts page (``docs/concepts.md``).
"""

from __future__ import annotations

from otel_compaction.config import Settings
from otel_compaction.detectors.base import DetectionContext, FiredAt, RuleDetector
from otel_compaction.detectors.veto import settings_verdict
from otel_compaction.model import CompactionRecord, Finding, PhaseEstimate
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind

_CLIENT = frozenset({CompactionSource.EXPLICIT, CompactionSource.INFERRED})
_PROVIDER = frozenset({CompactionSource.ANTHROPIC, CompactionSource.OPENAI})
_SUMMARIZING = frozenset({CompactionMode.LOSSY, CompactionMode.SERVER})


def judged(record: CompactionRecord, settings: Settings) -> bool:
    """Whether the boundary rule judges ``record`` at all (its mode, source and the scope)."""
    if record.mode not in _SUMMARIZING:
        return False
    if settings.boundary_scope == "client_lossy":
        return record.mode is CompactionMode.LOSSY and record.source in _CLIENT
    return True


def boundary_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag a summarizing compaction fired while the phase-transition veto held."""
    record, phase, s = ctx.record, ctx.phase, ctx.settings
    if not judged(record, s) or phase is None or not phase.known:
        return None
    fired = ctx.fired_at()
    if fired is None:
        return None
    tf = fired.fraction
    ad = ctx.pressure.attention_decay if ctx.pressure is not None else 0.0
    tl = phase.transition_likelihood
    rule = settings_verdict(tf, ad, tl, s).flag_rule
    if rule is None:
        return None
    if rule == "ceiling":
        pressure = f"at {fired.text()} >= hard ceiling {s.hard_ceiling:.2f}"
    else:
        pressure = f"at {_pressure(fired, ad, s.pressure_threshold)}"
    reason = (
        f"{_what(record)} at turn {record.turn_index} {pressure} while the phase was "
        f"changing ({_change(phase, s)}, transition likelihood {tl:.2f} > "
        f"{s.transition_veto:.2f}){_sizes(record, ctx.compacted_tokens)}; "
        f"{_remedy(record, s, rule)}"
    )
    return ctx.finding(FindingKind.BOUNDARY_COMPACTION, rule, reason)


def _what(record: CompactionRecord) -> str:
    if record.source in _PROVIDER:
        return f"{record.source.value} server-side compaction"
    if record.source is CompactionSource.IMPORT:
        return f"{record.trigger} compaction" if record.trigger else "compaction"
    return f"{record.mode.value} compaction"


def _change(phase: PhaseEstimate, s: Settings) -> str:
    """'hypothesize, held until turn 28, now 0.48 vs patch 0.44': the held phase giving way."""
    ranked = _ranked(phase, s.phases)
    if phase.held_phase is None:
        return ranked
    return f"{phase.held_phase} held until turn {phase.held_turn}, now {ranked}"


def _ranked(phase: PhaseEstimate, names: tuple[str, ...]) -> str:
    """'hypothesize 0.48 vs patch 0.44': the two most likely phases."""
    if len(phase.distribution) != len(names) or len(names) < 2:
        return f"{phase.name} {phase.confidence:.2f}"
    ranked = sorted(zip(phase.distribution, names, strict=True), key=lambda pn: -pn[0])
    (p1, n1), (p2, n2) = ranked[0], ranked[1]
    return f"{n1} {p1:.2f} vs {n2} {p2:.2f}"


def _pressure(fired: FiredAt, ad: float, threshold: float) -> str:
    """The pressure that made the compaction due, as it appears in the reason."""
    if fired.fraction >= threshold:
        return fired.text()
    return f"{fired.text()} and attention decay {ad:.2f} >= {threshold:.2f}"


def _sizes(record: CompactionRecord, compacted: int | None) -> str:
    """'; it summarized away about 52,000 tokens and kept 38,000 verbatim', where known."""
    if compacted is None:
        return ""
    kept = record.retained_tail_tokens
    tail = f" and kept {kept:,} verbatim" if kept else " and kept no turn verbatim"
    return f"; it summarized away about {compacted:,} tokens{tail}"


def _remedy(record: CompactionRecord, s: Settings, rule: str) -> str:
    """The remedy that fits how the compaction was triggered."""
    keep = (
        f"keep the last {s.extractive_tail_turns} turns and the tool outputs the next "
        f"phase needs verbatim"
    )
    if record.source in _PROVIDER:
        return (
            f"set pause_after_compaction and defer the compaction until the phase "
            f"settles, or move the trigger; if it cannot wait, {keep}"
        )
    if record.source in _CLIENT and record.trigger != "auto":
        if rule == "ceiling":
            return f"above the ceiling compaction must be extractive: {keep}"
        return f"use extractive compaction ({keep}) or defer until the phase settles"
    return (
        "a fixed token threshold fired it: compact at the end of a phase instead "
        "(when a sub-task resolves, before the threshold), or raise the threshold"
    )


BOUNDARY_DETECTOR = RuleDetector(FindingKind.BOUNDARY_COMPACTION, boundary_compaction)
