"""The boundary rule's numbers, once: pressure is the cause, a likely phase flip the veto.

Why: docs/concepts.md#boundary-compaction.

Used by the ``boundary_compaction`` detector, by ``policy.should_compact`` and by
the advisor, with the thresholds of ``Settings`` (``pressure_threshold`` 0.65,
``transition_veto`` 0.35, ``hard_ceiling`` 0.92). With ``tf`` the token fraction,
``ad`` the attention decay and ``tl`` the phase-transition likelihood:

- at the ceiling: ``tf >= hard_ceiling``; compaction must happen, extractively;
- due: at the ceiling, or ``tf >= pressure_threshold or ad >= pressure_threshold``
  (from the threshold on; an unknown, NaN, pressure is never due);
- vetoed: ``tl > transition_veto``, strictly; it matters only when due.

A lossy compaction is flagged (the detector) where the policy would not have
allowed it while the phase was about to flip: rule ``veto`` where the policy
refuses (due, below the ceiling, vetoed), rule ``ceiling`` where it allows only
an extractive one (at the ceiling, vetoed). At the ceiling with a stable phase
the policy still asks for extractive compaction, but nothing was about to flip,
so a lossy one there is not a boundary compaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_compaction.config import Settings


@dataclass(frozen=True, slots=True)
class VetoVerdict:
    """What the boundary rule says about compacting now."""

    due: bool
    """Pressure calls for compaction (at or above the threshold, or at the ceiling)."""
    at_ceiling: bool
    """The token fraction reached the hard ceiling: compact now, extractively."""
    vetoed: bool
    """The phase is about to flip: lossy compaction would lose the evidence it needs."""

    @property
    def refuses_lossy(self) -> bool:
        """Whether lossy compaction is refused here (``should_compact`` raises)."""
        return self.due and self.vetoed and not self.at_ceiling

    @property
    def flag_rule(self) -> str | None:
        """The boundary finding's rule for a lossy compaction here (None: no finding)."""
        if not (self.due and self.vetoed):
            return None
        return "ceiling" if self.at_ceiling else "veto"


def veto_verdict(
    token_fraction: float,
    attention_decay: float,
    transition_likelihood: float,
    *,
    pressure_threshold: float,
    transition_veto: float,
    hard_ceiling: float,
) -> VetoVerdict:
    """The boundary rule on one moment's pressure and phase-transition likelihood."""
    at_ceiling = token_fraction >= hard_ceiling
    due = (
        at_ceiling or token_fraction >= pressure_threshold or attention_decay >= pressure_threshold
    )
    return VetoVerdict(
        due=due, at_ceiling=at_ceiling, vetoed=transition_likelihood > transition_veto
    )


def settings_verdict(tf: float, ad: float, tl: float, settings: Settings) -> VetoVerdict:
    """:func:`veto_verdict` with the thresholds of ``settings``."""
    return veto_verdict(
        tf,
        ad,
        tl,
        pressure_threshold=settings.pressure_threshold,
        transition_veto=settings.transition_veto,
        hard_ceiling=settings.hard_ceiling,
    )
