"""Re-expansion livelock (docs/concepts.md#re-expansion-livelock) and the vendors' guards.

One finding kind, ``reexpansion_livelock``, three rules (the first that holds
names the finding):

- ``cadence``: with at least ``livelock_min_intervals`` intervals in
  the conversation's run of compactions, each of the last three shrinks exceeds
  ``livelock_shrink_threshold`` while the new-content-per-turn of those cycles is
  flat (``spread <= livelock_content_stability``); see ``cadence.py``;
- ``thrashing`` (Claude Code's guard): the last ``thrashing_count`` compactions
  each came within ``thrashing_turns`` turns of the previous one;
- ``no_progress`` (Codex's guard): the last ``no_progress_count`` compactions
  were each ineffective (``ineffective.py``), on the context of the first call
  after each or by how soon the next one followed (``refilled``).

All three are judged once the compaction is settled (its size after known), so
the reason can say what this compaction itself bought.

The run of compactions is the conversation's, as far as memory keeps it, less
prune compactions (clearing tool outputs happens inside a summarize cycle: note
004's cycles are summary to summary, so frequent prunes are not thrashing) and
failed ones (nothing was replaced).

The remedy follows the diagnosis the numbers give (:func:`remedy`): a fixed part
at the trigger (the compactions are ineffective), summaries growing by what they
carry over, or new content per turn larger than the headroom the trigger leaves.
"""

from __future__ import annotations

from otel_compaction.config import Settings
from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.detectors.cadence import cadence_verdict, format_numbers
from otel_compaction.detectors.ineffective import (
    LINEAGE_REMEDY,
    bought_nothing,
    diagnosis,
    is_ineffective,
    reclaimed_share,
    share_text,
    summarizing,
    trigger_fraction,
)
from otel_compaction.model import CompactionRecord, Cycle, Finding
from otel_compaction.semconv import CompactionMode, FindingKind

REMEDY = LINEAGE_REMEDY


def reexpansion_livelock(ctx: DetectionContext) -> Finding | None:
    """Flag a compaction whose run shows an accelerating cadence or thrashing."""
    if ctx.record.mode is CompactionMode.PRUNE or ctx.record.failed:
        return None
    for rule in (_cadence, _thrashing):
        found = rule(ctx)
        if found is not None:
            return found
    return None


def _cycles(run: tuple[CompactionRecord, ...]) -> list[Cycle]:
    return [r.cycle for r in summarizing(run) if r.cycle is not None]


def _cadence(ctx: DetectionContext) -> Finding | None:
    s = ctx.settings
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
        f"pressure is compaction-induced: {remedy(ctx, cadence=True)}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "cadence", reason)


def _thrashing(ctx: DetectionContext) -> Finding | None:
    s = ctx.settings
    intervals = [c.interval_turns for c in _cycles(ctx.run)][-s.thrashing_count :]
    if len(intervals) < s.thrashing_count or any(i > s.thrashing_turns for i in intervals):
        return None
    reason = (
        f"compaction thrashing: {s.thrashing_count} compactions in a row each within "
        f"{s.thrashing_turns} turns of the previous one (intervals "
        f"{format_numbers(intervals)}); {remedy(ctx)}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "thrashing", reason)


def no_progress(ctx: DetectionContext) -> Finding | None:
    """Flag the last of ``no_progress_count`` ineffective compactions in a row (settled)."""
    s, record = ctx.settings, ctx.record
    if record.mode is CompactionMode.PRUNE or record.failed:
        return None
    run = summarizing(ctx.run)[-s.no_progress_count :]
    trigger = trigger_fraction(ctx.run, s)
    flags = _bought_nothing(ctx.run, trigger, s)[-s.no_progress_count :]
    if len(run) < s.no_progress_count or not all(flags):
        return None
    afters = [r.tokens_after or 0 for r in run]
    window = record.window or 0
    if trigger is None:
        where = "no one trigger: the agent compacts at different sizes"
        each = (
            f"each reclaiming less than {s.ineffective_min_reclaimed:.0%} or followed by the "
            f"next compaction within {s.ineffective_min_turns:g} turns"
        )
    else:
        at = f" at {round(trigger * window):,} tokens" if window else ""
        where = f"the trigger is{at}, {share_text(trigger)} of the window"
        each = (
            f"each at the trigger or short of {s.ineffective_min_turns:g} turns before the "
            f"next compaction"
        )
    reason = (
        f"compaction is not recovering headroom: {s.no_progress_count} compactions in a "
        f"row left the next call at {format_numbers(afters, '{:,}')} tokens ({where}), "
        f"{each}, so the agent compacts again at once; {diagnosis(ctx)}"
    )
    return ctx.finding(FindingKind.REEXPANSION_LIVELOCK, "no_progress", reason)


def remedy(ctx: DetectionContext, *, cadence: bool = False) -> str:
    """The remedy that fits the cause the numbers show, most specific first.

    An accelerating cadence under flat new content (``cadence``) is itself the livelock incident's
    diagnosis, re-expansion: its headroom shrinks because what compaction leaves grows,
    so after step 1 it gets the livelock remedy.

    1. the earlier compactions of the run were ineffective: why, as the ineffective
       finding says it (the fixed part at the trigger, the growth per turn, the summary);
    2. this summary has a parent, so it carries over the earlier summary's content (the
       lineage rules): the livelock incident's re-expansion, reset the lineage;
    3. the context grew per turn (measured, else the cycle's new content) so much that
       ``thrashing_turns`` turns fill the headroom the trigger leaves: raise the trigger or
       trim tool outputs;
    4. otherwise the numbers do not tell: both remedies, each with its condition.
    """
    s, record = ctx.settings, ctx.record
    trigger = trigger_fraction(ctx.run, s)
    # The earlier compactions judged with this one in the run: how soon each was
    # followed counts (``refilled``), and this one follows the last of them.
    earlier = _bought_nothing(ctx.run, trigger, s)[:-1][-s.no_progress_count :]
    if earlier and all(earlier):
        share = reclaimed_share(record)
        if share is not None and not is_ineffective(record, trigger, s):
            return (
                f"the compactions before it bought (almost) nothing, and this one "
                f"reclaimed {share:.0%} ({record.tokens_before:,} -> {record.tokens_after:,} "
                f"tokens): the thrashing ended here; what the earlier summaries kept, "
                f"this one let go"
            )
        return f"the compactions before it bought (almost) nothing: {diagnosis(ctx)}"
    if cadence:
        return REMEDY
    if record.parent_id is not None and not record.lineage_assumed:
        # A measured or stated parent: this summary carries the earlier one's content.
        return (
            f"its summary carries over the previous summary's content (lineage generation "
            f"{record.generation}): {REMEDY}"
        )
    headroom = _headroom(ctx.history, trigger)
    per_turn = _per_turn(record)
    if headroom is not None and per_turn and per_turn * s.thrashing_turns >= headroom:
        return (
            f"each turn adds about {per_turn:,.0f} tokens, while compaction leaves "
            f"{headroom:,} tokens of headroom below the trigger: raise the trigger or trim "
            f"tool outputs"
        )
    return (
        f"the sizes do not show why; if the summaries carry earlier summaries, {REMEDY}; if "
        f"each turn outgrows the headroom the trigger leaves, raise the trigger or trim "
        f"tool outputs"
    )


def _bought_nothing(
    run: tuple[CompactionRecord, ...], trigger: float | None, s: Settings
) -> list[bool]:
    """For each summarizing compaction of ``run``, in order: whether it bought nothing."""
    return [
        bought_nothing(run, i, trigger, s)
        for i, r in enumerate(run)
        if r.mode is not CompactionMode.PRUNE and not r.failed
    ]


def _per_turn(record: CompactionRecord) -> float | None:
    """The context's growth per turn in the cycle this compaction closed: measured, else
    the cycle's new content per turn."""
    if record.growth_per_turn is not None and record.growth_per_turn > 0:
        return record.growth_per_turn
    cycle = record.cycle
    if cycle is None or cycle.interval_turns <= 0 or cycle.new_content_tokens <= 0:
        return None
    return cycle.new_content_per_turn


def _headroom(history: tuple[CompactionRecord, ...], trigger: float | None) -> int | None:
    """Tokens between the context after the previous compaction and the trigger."""
    previous = summarizing(history)[-1:] if history else ()
    if not previous or trigger is None:
        return None
    last = previous[0]
    if last.tokens_after is None or not last.window:
        return None
    return max(0, round(trigger * last.window) - last.tokens_after)


LIVELOCK_DETECTOR = RuleDetector(
    FindingKind.REEXPANSION_LIVELOCK, reexpansion_livelock, needs_size_after=True
)
NO_PROGRESS_DETECTOR = RuleDetector(
    FindingKind.REEXPANSION_LIVELOCK, no_progress, needs_size_after=True
)
