"""Boundary compaction: lossy compaction while the phase was about to flip.

The rule and its incident: docs/concepts.md#boundary-compaction.
"""

from __future__ import annotations

import dataclasses

import pytest

from otel_compaction.config import Settings
from otel_compaction.detectors import DetectionContext, boundary_compaction
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind
from tests.detectors.records import SETTLED, STRADDLING, context_of, phase, pressure, record
from tests.detectors.scenarios import note_000_run


def test_note_000_compaction_at_turn_30_is_flagged() -> None:
    """The boundary incident: the lossy compaction at turn 30, straddling the phases, is flagged."""
    _, analysis = note_000_run(30)
    [finding] = analysis.findings
    assert finding.kind is FindingKind.BOUNDARY_COMPACTION
    assert (finding.rule, finding.turn) == ("veto", 30)
    assert "hypothesize 0.48 vs patch 0.44" in finding.reason
    assert "token fraction 0.71" in finding.reason
    assert "keep the last 8 turns" in finding.reason
    assert analysis.flagged(FindingKind.BOUNDARY_COMPACTION)


def test_note_000_same_compaction_at_turn_34_is_not_flagged() -> None:
    """Deferred to turn 34 (patch 0.88 reported), the same lossy compaction is fine."""
    _, analysis = note_000_run(34)
    assert analysis.record.mode is CompactionMode.LOSSY
    assert analysis.record.token_fraction is not None
    assert analysis.record.token_fraction > 0.65  # pressure was due: only the phase differs
    assert analysis.findings == ()


def test_extractive_compaction_at_the_boundary_is_not_flagged() -> None:
    """What the boundary rule recommends at a boundary (extractive) is never flagged by it."""
    _, analysis = note_000_run(30, mode=CompactionMode.EXTRACTIVE)
    assert not analysis.flagged(FindingKind.BOUNDARY_COMPACTION)


@pytest.mark.parametrize("mode", [CompactionMode.EXTRACTIVE, CompactionMode.PRUNE])
def test_compactions_that_keep_the_evidence_are_not_judged(mode: CompactionMode) -> None:
    """Extractive and prune compactions are not flagged, whatever the state."""
    ctx = context_of([record(mode=mode, token_fraction=0.95)], phase=STRADDLING)
    assert boundary_compaction(ctx) is None


def test_a_provider_side_compaction_is_judged_with_a_remedy_for_its_trigger() -> None:
    """An Anthropic server-side compaction at a boundary is flagged like a client's, and the
    remedy is the provider's knob (pause_after_compaction, move the trigger)."""
    rec = record(mode=CompactionMode.SERVER, source=CompactionSource.ANTHROPIC, trigger=None)
    finding = boundary_compaction(
        context_of([dataclasses.replace(rec, token_fraction=0.8)], phase=STRADDLING)
    )
    assert finding is not None
    assert finding.reason.startswith("anthropic server-side compaction at turn 30")
    assert "pause_after_compaction" in finding.reason


def test_an_imported_auto_compaction_gets_the_fixed_threshold_remedy() -> None:
    """Claude Code's auto-compaction fired by its threshold: compact at the end of a phase."""
    rec = record(source=CompactionSource.IMPORT, trigger="auto", token_fraction=0.8)
    finding = boundary_compaction(context_of([rec], phase=STRADDLING))
    assert finding is not None
    assert finding.reason.startswith("auto compaction at turn 30")
    assert "compact at the end of a phase" in finding.reason


@pytest.mark.parametrize(
    ("source", "mode", "judged"),
    [
        (CompactionSource.EXPLICIT, CompactionMode.LOSSY, True),
        (CompactionSource.INFERRED, CompactionMode.LOSSY, True),
        (CompactionSource.ANTHROPIC, CompactionMode.SERVER, False),
        (CompactionSource.IMPORT, CompactionMode.LOSSY, False),
    ],
)
def test_the_narrow_scope_judges_client_lossy_compactions_only(
    source: CompactionSource, mode: CompactionMode, judged: bool
) -> None:
    """boundary_scope=client_lossy restores the original scope: the client's own lossy ones."""
    narrow = Settings(boundary_scope="client_lossy")
    rec = record(source=source, mode=mode, token_fraction=0.8, trigger=None)
    found = boundary_compaction(context_of([rec], narrow, phase=STRADDLING))
    assert (found is not None) is judged


def test_an_unknown_phase_is_not_judged() -> None:
    """Too little evidence for any phase: however spread its belief, no veto from ignorance."""
    unknown = dataclasses.replace(STRADDLING, known=False, transition_likelihood=0.0)
    assert boundary_compaction(context_of([record(token_fraction=0.9)], phase=unknown)) is None


def test_the_reason_names_the_held_phase_and_the_sizes() -> None:
    """The reason says which held phase was giving way and how much was dropped and kept."""
    held = dataclasses.replace(STRADDLING, held_phase="hypothesize", held_turn=28)
    rec = record(token_fraction=0.71, retained_tail_tokens=38_000, trigger=None)
    finding = boundary_compaction(context_of([rec], phase=held, compacted_tokens=52_000))
    assert finding is not None
    assert "hypothesize held until turn 28, now hypothesize 0.48 vs patch 0.44" in finding.reason
    assert "summarized away about 52,000 tokens and kept 38,000 verbatim" in finding.reason


def test_ceiling_rule() -> None:
    """At or above the hard ceiling, a lossy compaction during a likely flip is rule 'ceiling'."""
    finding = boundary_compaction(context_of([record(token_fraction=0.92)], phase=STRADDLING))
    assert finding is not None
    assert finding.rule == "ceiling"
    assert "0.92 >= hard ceiling 0.92" in finding.reason


def test_ceiling_with_a_stable_phase_is_not_flagged() -> None:
    """Above the ceiling with a settled phase, a lossy compaction is acceptable."""
    assert boundary_compaction(context_of([record(token_fraction=0.97)], phase=SETTLED)) is None


def test_unknown_phase_gives_no_finding() -> None:
    """Without any phase signal the rule cannot judge, so it stays silent."""
    assert boundary_compaction(context_of([record(token_fraction=0.8)], phase=None)) is None


def test_unknown_pressure_gives_no_finding() -> None:
    """Without a token fraction (no size, no turn) the rule stays silent."""
    assert boundary_compaction(context_of([record()], phase=STRADDLING)) is None


def test_no_pressure_no_veto() -> None:
    """Below the pressure threshold the veto does not hold (as in should_compact): no finding."""
    ctx = context_of([record(token_fraction=0.5)], phase=STRADDLING, pressure=pressure(0.5, 0.3))
    assert boundary_compaction(ctx) is None


def test_attention_decay_alone_makes_pressure_due() -> None:
    """Attention decay at the threshold counts as pressure and is named in the reason."""
    ctx = context_of([record()], phase=STRADDLING, pressure=pressure(0.40, 0.70))
    finding = boundary_compaction(ctx)
    assert finding is not None
    assert finding.rule == "veto"
    assert "attention decay 0.70" in finding.reason


def test_the_last_turn_pressure_is_used_when_sizes_are_unknown() -> None:
    """Without tokens_before, the token fraction of the last turn decides."""
    ctx = context_of([record()], phase=STRADDLING, pressure=pressure(0.71))
    finding = boundary_compaction(ctx)
    assert finding is not None
    assert "token fraction 0.71" in finding.reason


def _unsent(source: CompactionSource, growth: float | None) -> DetectionContext:
    """A rewrite measured at the last call's 0.61, the cycle growing 20,000 tokens a turn."""
    rec = record(source=source, tokens_before=122_000, token_fraction=0.61, growth_per_turn=growth)
    return context_of([rec], phase=STRADDLING, pressure=pressure(0.61))


def test_an_inferred_rewrite_that_kept_nothing_new_fired_a_turn_later() -> None:
    """The summary took a turn no call carried (the size is the last call's): one turn of the
    cycle's growth stands in for it, and the reason says the fraction is estimated."""
    finding = boundary_compaction(_unsent(CompactionSource.INFERRED, 20_000.0))
    assert finding is not None
    assert "token fraction about 0.71 (0.61 at the last call, plus a turn's growth" in (
        finding.reason
    )


@pytest.mark.parametrize(
    ("source", "growth"),
    [(CompactionSource.EXPLICIT, 20_000.0), (CompactionSource.INFERRED, None)],
)
def test_reported_sizes_and_unknown_growth_are_used_as_they_are(
    source: CompactionSource, growth: float | None
) -> None:
    """An agent's own size (explicit) is its count; without growth there is no estimate."""
    assert boundary_compaction(_unsent(source, growth)) is None


@pytest.mark.parametrize(
    ("fraction", "likelihood", "flagged"),
    [(0.65, 0.36, True), (0.6499, 0.9, False), (0.8, 0.35, False), (0.8, 0.3501, True)],
)
def test_threshold_edges(fraction: float, likelihood: float, flagged: bool) -> None:
    """Pressure counts from the threshold on (>=); the veto needs likelihood strictly above tau."""
    ctx = context_of(
        [record(token_fraction=fraction)], phase=phase((0.1, 0.5, 0.3, 0.1), likelihood)
    )
    assert (boundary_compaction(ctx) is not None) is flagged


def test_phase_without_a_full_distribution_names_the_phase() -> None:
    """A distribution not aligned with the configured phases falls back to name and confidence."""
    odd = phase((0.5, 0.5), 0.6)
    finding = boundary_compaction(context_of([record(token_fraction=0.8)], phase=odd))
    assert finding is not None
    assert "(explore 0.50, transition likelihood" in finding.reason
