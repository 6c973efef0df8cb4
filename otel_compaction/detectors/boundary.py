"""Boundary compaction (source note 000): a lossy compaction while the phase was about to flip.

Pressure causes compaction; the phase-transition likelihood vetoes *lossy*
compaction. With ``tf`` the token fraction at the compaction (``tokens_before /
window``, else the last turn's), ``ad`` the attention decay after the last turn
before it, ``tl`` the transition likelihood at that moment:

- rule ``ceiling``: ``tf >= hard_ceiling`` and ``tl > transition_veto``: compaction
  had to happen, but it had to be extractive;
- rule ``veto``: ``tf >= pressure_threshold or ad >= pressure_threshold`` and
  ``tl > transition_veto``: the veto held, the compaction should have been
  extractive or deferred.

Only mode ``lossy`` is judged (extractive, prune and server compactions are
not flagged by this rule), and nothing is flagged when the phase or the
pressure is unknown.
"""

from __future__ import annotations

from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.model import Finding, PhaseEstimate
from otel_compaction.semconv import CompactionMode, FindingKind


def boundary_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag a lossy compaction fired while the phase-transition veto held."""
    record, phase, s = ctx.record, ctx.phase, ctx.settings
    if record.mode is not CompactionMode.LOSSY or phase is None:
        return None
    tf = record.token_fraction
    if tf is None and ctx.pressure is not None:
        tf = ctx.pressure.token_fraction
    if tf is None:
        return None
    ad = ctx.pressure.attention_decay if ctx.pressure is not None else 0.0
    tl = phase.transition_likelihood
    if tl <= s.transition_veto:
        return None
    flip = (
        f"the phase was about to flip (transition likelihood {tl:.2f} > "
        f"{s.transition_veto:.2f}, {_straddle(phase, s.phases)})"
    )
    tail = f"keep the last {s.extractive_tail_turns} turns"
    if tf >= s.hard_ceiling:
        reason = (
            f"lossy compaction at turn {record.turn_index} at token fraction {tf:.2f} "
            f">= hard ceiling {s.hard_ceiling:.2f} while {flip}; above the ceiling "
            f"compaction must be extractive ({tail})"
        )
        return ctx.finding(FindingKind.BOUNDARY_COMPACTION, "ceiling", reason)
    if tf < s.pressure_threshold and ad < s.pressure_threshold:
        return None
    reason = (
        f"lossy compaction at turn {record.turn_index} while {flip} at "
        f"{_pressure(tf, ad, s.pressure_threshold)}; use extractive compaction "
        f"({tail}) or defer"
    )
    return ctx.finding(FindingKind.BOUNDARY_COMPACTION, "veto", reason)


def _straddle(phase: PhaseEstimate, names: tuple[str, ...]) -> str:
    """ "hypothesize 0.48 vs patch 0.44": the two most likely phases."""
    if len(phase.distribution) != len(names) or len(names) < 2:
        return f"{phase.name} {phase.confidence:.2f}"
    ranked = sorted(zip(phase.distribution, names, strict=True), key=lambda pn: -pn[0])
    (p1, n1), (p2, n2) = ranked[0], ranked[1]
    return f"{n1} {p1:.2f} vs {n2} {p2:.2f}"


def _pressure(tf: float, ad: float, threshold: float) -> str:
    """The pressure that made the compaction due, as it appears in the reason."""
    if tf >= threshold:
        return f"token fraction {tf:.2f}"
    return f"token fraction {tf:.2f} and attention decay {ad:.2f} >= {threshold:.2f}"


BOUNDARY_DETECTOR = RuleDetector(FindingKind.BOUNDARY_COMPACTION, boundary_compaction)
