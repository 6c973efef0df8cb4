"""Ineffective compaction: a compaction that bought (almost) no turns.

Seen in real sessions rather than in the worked incidents: agents whose fixed part
(system prompt, tool definitions, the task) already fills the window up to the
trigger compact after nearly every call, and each compaction buys nothing. The
size after a compaction is the context of the first call that sees the
compacted context (the record's ``tokens_after``, once settled), never a
figure the source reports about itself.

With ``before`` the compaction's ``tokens_before``, ``after`` that first call's
context, ``reclaimed = before - after``, ``window`` the context window,
``trigger`` the conversation's trigger (:func:`trigger_fraction`) and ``g`` the
context's growth per turn in the cycle the compaction closed, a summarizing
compaction is **ineffective** when

- ``after / window >= trigger`` (the next turn compacts again), or
- ``reclaimed < ineffective_min_turns * g`` (2 by default: it bought fewer than
  two turns of the conversation's own growth), or, when ``g`` is unknown,
- ``reclaimed / before < ineffective_min_reclaimed`` (0.05 by default).

The livelock incident's run (fires at 85%, each compaction reclaims ~14k tokens, nine turns
of its growth at first) is not ineffective: its trouble is the cadence, which
the livelock rule judges. Prune compactions (tool outputs cleared, a little at
a time by design) and failed ones (nothing was replaced) are not judged. The
reason names what explains the result: the system prompt and tool definitions
when their size is known, else the smallest context the conversation has had,
else the growth per turn against the headroom.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from otel_compaction.config import Settings
from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.model import CompactionRecord, Finding
from otel_compaction.semconv import CompactionMode, FindingKind

REMEDY = (
    "compaction cannot help: shrink the tool set or the system prompt, or use a "
    "model with a larger window"
)
LINEAGE_REMEDY = (
    "reset the compaction lineage (re-summarize from raw retained turns, dropping "
    "the prior summary) and pin task constraints outside the compacted region"
)
"""The livelock remedy, for summaries that grow by what they carry over."""
_LARGE_RECLAIM = 0.25
"""A compaction that reclaimed this share of the context and still bought too few turns
is outrun by the context's growth, not held back by its own summary."""
_EXPLAINS = 0.9
"""The fixed part explains an ineffective compaction when it is at least this share of
the context after it."""


def summarizing(run: Sequence[CompactionRecord]) -> tuple[CompactionRecord, ...]:
    """The compactions that replaced history with a summary: no prunes, no failures."""
    return tuple(r for r in run if r.mode is not CompactionMode.PRUNE and not r.failed)


def trigger_fraction(run: Sequence[CompactionRecord], settings: Settings) -> float:
    """The conversation's trigger: the median ``tokens_before / window`` of its
    summarizing compactions (the median resists one manual compaction fired early),
    or the pressure threshold when none knows its size."""
    fractions = [r.token_fraction for r in summarizing(run) if r.token_fraction is not None]
    return statistics.median(fractions) if fractions else settings.pressure_threshold


def reclaimed_share(record: CompactionRecord) -> float | None:
    """``(before - after) / before``, negative when the context grew; None when unknown."""
    before, after = record.tokens_before, record.tokens_after
    if before is None or after is None or before <= 0:
        return None
    return (before - after) / before


def is_ineffective(record: CompactionRecord, trigger: float, settings: Settings) -> bool:
    """Whether ``record`` (settled, summarizing) bought nothing (see the module docstring)."""
    before, after, window = record.tokens_before, record.tokens_after, record.window
    if before is None or before <= 0 or after is None or not window:
        return False
    if record.failed or record.mode is CompactionMode.PRUNE:
        return False
    if after / window >= trigger:
        return True
    growth = record.growth_per_turn
    if growth is not None and growth > 0:
        return before - after < settings.ineffective_min_turns * growth
    return (before - after) / before < settings.ineffective_min_reclaimed


def ineffective_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag a summarizing compaction that bought (almost) no turns."""
    record, s = ctx.record, ctx.settings
    trigger = trigger_fraction(ctx.run, s)
    before, after, window = record.tokens_before, record.tokens_after, record.window
    if before is None or after is None or not window or not is_ineffective(record, trigger, s):
        return None
    reclaimed = before - after
    if reclaimed > 0:
        what = (
            f"reclaimed {reclaimed:,} tokens ({reclaimed / before:.1%}: {before:,} -> "
            f"{after:,}){_in_turns(reclaimed, record.growth_per_turn)}"
        )
    else:
        what = f"reclaimed nothing ({before:,} tokens before, {after:,} at the next call)"
    reason = (
        f"compaction at turn {record.turn_index} {what}: the next call is at "
        f"{after / window:.2f} of the window, against a trigger of {trigger:.2f}; "
        f"{diagnosis(ctx)}"
    )
    return ctx.finding(FindingKind.INEFFECTIVE_COMPACTION, "reclaimed", reason)


def _in_turns(reclaimed: int, growth: float | None) -> str:
    if growth is None or growth <= 0:
        return ""
    return f", about {reclaimed / growth:.1f} turns of the {growth:,.0f} tokens a turn adds"


def diagnosis(ctx: DetectionContext) -> str:
    """Why the compaction could not reclaim more, from the sizes at hand, and what to do."""
    record, window = ctx.record, ctx.record.window or 0
    after = record.tokens_after or 0
    fixed, floor = ctx.fixed_tokens, ctx.floor_tokens
    if fixed is not None and window and fixed >= _EXPLAINS * after:
        return (
            f"the system prompt and tool definitions alone are {fixed:,} tokens "
            f"({fixed / window:.2f} of the window): {REMEDY}"
        )
    if floor is not None and window and floor >= _EXPLAINS * after:
        return (
            f"this conversation has never been below {floor:,} tokens ({floor / window:.2f} "
            f"of the window), so a fixed part of about that size (system prompt, tool "
            f"definitions, the first request) fills the window up to the trigger; if it is "
            f"the prompt and tools, {REMEDY}"
        )
    share = reclaimed_share(record)
    if record.growth_per_turn and share is not None and share >= _LARGE_RECLAIM:
        return (
            f"each turn adds about {record.growth_per_turn:,.0f} tokens, more than "
            f"compaction makes room for: trim tool outputs, or raise the trigger"
        )
    if record.parent_id is not None and not record.lineage_assumed:
        return (
            f"its summary is a summary of summaries (lineage generation {record.generation}), "
            f"which fill the room compaction made: {LINEAGE_REMEDY}"
        )
    return (
        "the summary and the turns kept verbatim fill the room compaction made: keep "
        "fewer turns verbatim or summarize more tightly"
    )


INEFFECTIVE_DETECTOR = RuleDetector(
    FindingKind.INEFFECTIVE_COMPACTION, ineffective_compaction, needs_size_after=True
)
