"""Re-expansion livelock (source note 004) and the vendors' thrashing guards.

One finding kind, ``reexpansion_livelock``, three rules tried in this order
(the first that holds names the finding):

- ``cadence`` (note 004): with at least ``livelock_min_intervals`` intervals in
  the conversation's run of compactions, each of the last three shrinks exceeds
  ``livelock_shrink_threshold`` while the new-content-per-turn of those cycles is
  flat (``spread <= livelock_content_stability``); see ``cadence.py``;
- ``thrashing`` (Claude Code's guard): the last ``thrashing_count`` compactions
  each came within ``thrashing_turns`` turns of the previous one;
- ``no_progress`` (Codex's guard): the last ``no_progress_count`` compactions each
  left the context at or above the level that triggers compaction in this
  conversation, so the next turn compacts again. That level is the median
  ``tokens_before / window`` of those compactions (the observed trigger), or
  the pressure threshold when none is known; unknown ``tokens_after`` breaks the run.

The run of compactions is the conversation's, as far as memory keeps it, less
prune compactions: clearing tool outputs happens inside a summarize cycle (note
004's cycles are summary to summary), so frequent prunes are not thrashing.
"""

from __future__ import annotations

import statistics

from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.detectors.cadence import cadence_verdict, format_numbers
from otel_compaction.model import CompactionRecord, Cycle, Finding
from otel_compaction.semconv import CompactionMode, FindingKind

REMEDY = (
    "reset the compaction lineage (re-summarize from raw retained turns, dropping "
    "the prior summary) and pin task constraints outside the compacted region"
)


def reexpansion_livelock(ctx: DetectionContext) -> Finding | None:
    """Flag a compaction whose conversation is in re-expansion livelock."""
    for rule in (_cadence, _thrashing, _no_progress):
        found = rule(ctx)
        if found is not None:
            return found
    return None


def _summarizing(run: tuple[CompactionRecord, ...]) -> tuple[CompactionRecord, ...]:
    return tuple(r for r in run if r.mode is not CompactionMode.PRUNE)


def _cycles(run: tuple[CompactionRecord, ...]) -> list[Cycle]:
    return [r.cycle for r in _summarizing(run) if r.cycle is not None]


def _cadence(ctx: DetectionContext) -> Finding | None:
    s = ctx.settings
    if ctx.record.mode is CompactionMode.PRUNE:
        return None
    cycles = _cycles(ctx.run)[-s.livelock_min_intervals :]
    verdict = cadence_verdict(
        [c.interval_turns for c in cycles],
        [c.new_content_per_turn for c in cycles],
        shrink_threshold=s.livelock_shrink_threshold,
        content_stability=s.livelock_content_stability,
        min_intervals=s.livelock_min_intervals,
    )
    if verdict is None or not verdict.livelock:
        return None
    reason = (
        f"compaction cadence accelerating: intervals {format_numbers(verdict.recent)} "
        f"turns, each shrinking by more than {s.livelock_shrink_threshold:.0%} "
        f"({format_numbers([x * 100 for x in verdict.shrinks], '{:.0f}%')}), while new "
        f"task content per turn is flat "
        f"({format_numbers([c.new_content_per_turn for c in cycles], '{:.0f}')} tokens, "
        f"spread {verdict.spread:.2f} <= {s.livelock_content_stability:.2f}); budget "
        f"pressure is compaction-induced: {REMEDY}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "cadence", reason)


def _thrashing(ctx: DetectionContext) -> Finding | None:
    s = ctx.settings
    intervals = [c.interval_turns for c in _cycles(ctx.run)][-s.thrashing_count :]
    if ctx.record.mode is CompactionMode.PRUNE:
        return None
    if len(intervals) < s.thrashing_count or any(i > s.thrashing_turns for i in intervals):
        return None
    reason = (
        f"compaction thrashing: {s.thrashing_count} compactions in a row each within "
        f"{s.thrashing_turns} turns of the previous one (intervals "
        f"{format_numbers(intervals)}); {REMEDY}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "thrashing", reason)


def _after_fraction(record: CompactionRecord) -> float | None:
    if record.tokens_after is None or not record.window:
        return None
    return record.tokens_after / record.window


def _no_progress(ctx: DetectionContext) -> Finding | None:
    s = ctx.settings
    if ctx.record.mode is CompactionMode.PRUNE:
        return None
    last = _summarizing(ctx.run)[-s.no_progress_count :]
    if len(last) < s.no_progress_count:
        return None
    fractions = [_after_fraction(r) for r in last]
    known = [f for f in fractions if f is not None]
    triggers = [r.token_fraction for r in last if r.token_fraction is not None]
    # The median resists one manual compaction fired at low pressure in the run.
    trigger = statistics.median(triggers) if triggers else s.pressure_threshold
    if len(known) < len(fractions) or any(f < trigger for f in known):
        return None
    origin = "the level compaction fired at" if triggers else "the pressure threshold"
    reason = (
        f"compaction is not recovering headroom: {s.no_progress_count} consecutive "
        f"compactions left the context at {format_numbers(known, '{:.2f}')} of the "
        f"window, at or above {origin} ({trigger:.2f}), so the next turn compacts "
        f"again; {REMEDY}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "no_progress", reason)


LIVELOCK_DETECTOR = RuleDetector(FindingKind.REEXPANSION_LIVELOCK, reexpansion_livelock)
