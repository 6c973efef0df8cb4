"""Ineffective compaction: a compaction that bought (almost) no turns.

Seen in real sessions rather than in the worked incidents: agents whose fixed part
(system prompt, tool definitions, the task) already fills the window up to the
trigger compact after nearly every call, and each compaction buys nothing. The
size after a compaction is the context of the first call that sees the
compacted context (the record's ``tokens_after``, once settled), never a
figure the source reports about itself.

With ``before`` the compaction's ``tokens_before``, ``after`` that first call's
context, ``window`` the context window, ``T`` the conversation's trigger in tokens
(:func:`trigger_fraction`; it may be unknown) and ``g`` the context's growth per turn in
the cycle the compaction closed, a summarizing compaction is **ineffective** when

- ``after >= T`` (the next turn compacts again), or
- ``T - after < (ineffective_min_turns - 1) * g`` (2 by default: the room it left below
  the trigger fills in less than one more turn, so it bought fewer than two calls), or
- when ``g`` or the trigger is unknown, ``(before - after) / before <
  ineffective_min_reclaimed`` (0.05 by default);

and, judged once more when the next compaction comes (``refilled``, hindsight), when
the agent compacted again after fewer than ``ineffective_min_turns`` calls on its
context: the turns it bought are then counted, not estimated.

The trigger is where the agent compacts. An agent that says a compaction fired on
its own (``trigger = "auto"``: Claude Code's transcripts and log events, failed
attempts too) was at or above its threshold then, so the smallest such size is an
upper bound of the trigger, and it is the trigger here. Otherwise an agent with a
fixed trigger compacts at about one size each time: on the first call at or above it,
so within a turn's growth of it. When at least half of the summarizing compactions lie
within one and a half turns of their cycle's growth (``_TRIGGER_TURNS``; 15% when the
growth is unknown) of their median ``tokens_before / window``, that median is the
trigger (the median resists one manual compaction fired early). A single compaction is
taken to be at the trigger only when it came at pressure (``pressure_threshold``). Else
the agent compacts on a schedule or by hand, the trigger is unknown, and only the
reclaimed share and the counted turns judge a compaction: a scheduled compaction of a
small context that reclaimed a fair share is not ineffective, however few turns of
growth that share is.

The livelock incident's run (fires at 85%, each compaction reclaims ~14k tokens, nine turns
of its growth at first) is not ineffective: its trouble is the cadence, which
the livelock rule judges. Prune compactions (tool outputs cleared, a little at
a time by design) and failed ones (nothing was replaced) are not judged. The
reason names what explains the result: the system prompt and tool definitions
when their size is known (reported by the agent, or measured: what the first call
after a compaction read from the prompt cache) and they alone fill the context, or
they take half of the trigger or more (too close to it); else the smallest context
the conversation has had, else the growth per turn against the headroom.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from otel_compaction.config import Settings
from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.model import CompactionRecord, Finding
from otel_compaction.semconv import CompactionMode, CompactionTrigger, FindingKind

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
_CLOSE = 0.5
"""The fixed part is too close to the trigger when it is at least this share of it: the
history a compaction can shrink is then at most the other half, and the summary it
writes and the turns it keeps take their share of that."""
_TRIGGER_TURNS = 1.5
"""Turns of growth within which the sizes before a fixed trigger's compactions lie: one
turn of overshoot, and half a turn for a turn's growth that varies."""
_TRIGGER_BAND = 0.15
"""Share of their median within which the sizes before a fixed trigger's compactions lie,
when the growth per turn is unknown."""


def summarizing(run: Sequence[CompactionRecord]) -> tuple[CompactionRecord, ...]:
    """The compactions that replaced history with a summary: no prunes, no failures."""
    return tuple(r for r in run if r.mode is not CompactionMode.PRUNE and not r.failed)


def trigger_fraction(run: Sequence[CompactionRecord], settings: Settings) -> float | None:
    """The conversation's trigger as a share of the window (see the module docstring):
    the smallest ``tokens_before / window`` of the compactions the agent fired on its own,
    else the median of its summarizing compactions' when at least half lie within
    ``_tolerance`` of it (one compaction: when at pressure); None when unknown."""
    automatic = [
        r.token_fraction
        for r in run
        if r.trigger == CompactionTrigger.AUTO
        and r.mode is not CompactionMode.PRUNE
        and r.token_fraction is not None
    ]
    if automatic:
        return min(automatic)
    at = [r for r in summarizing(run) if r.token_fraction is not None]
    if not at:
        return None
    median = statistics.median(r.token_fraction or 0.0 for r in at)
    if len(at) == 1:
        return median if median >= settings.pressure_threshold else None
    near = sum(1 for r in at if abs((r.token_fraction or 0.0) - median) <= _tolerance(r, median))
    return median if 2 * near >= len(at) else None


def _tolerance(record: CompactionRecord, median: float) -> float:
    """How far from the median a compaction at a fixed trigger may fire, as a share of the
    window: ``_TRIGGER_TURNS`` turns of its cycle's growth (it fires on the first call at
    or above the trigger, so it overshoots by at most the last turn), else ``_TRIGGER_BAND``
    of the median."""
    growth, window = record.growth_per_turn, record.window
    if growth is not None and growth > 0 and window:
        return _TRIGGER_TURNS * growth / window
    return _TRIGGER_BAND * median


def reclaimed_share(record: CompactionRecord) -> float | None:
    """``(before - after) / before``, negative when the context grew; None when unknown."""
    before, after = record.tokens_before, record.tokens_after
    if before is None or after is None or before <= 0:
        return None
    return (before - after) / before


AT_TRIGGER, NO_ROOM, SMALL_SHARE = "at_trigger", "no_room", "small_share"
"""Which criterion of the module docstring found a compaction ineffective."""


def criterion(record: CompactionRecord, trigger: float | None, settings: Settings) -> str | None:
    """Which criterion finds ``record`` (settled, summarizing) ineffective, if one does
    (see the module docstring): ``AT_TRIGGER``, ``NO_ROOM`` or ``SMALL_SHARE``."""
    before, after, window = record.tokens_before, record.tokens_after, record.window
    if before is None or before <= 0 or after is None or not window:
        return None
    if record.failed or record.mode is CompactionMode.PRUNE:
        return None
    if trigger is not None:
        if after / window >= trigger:
            return AT_TRIGGER
        room = headroom_turns(record, trigger)
        if room is not None:
            return NO_ROOM if room < settings.ineffective_min_turns - 1 else None
    small = (before - after) / before < settings.ineffective_min_reclaimed
    return SMALL_SHARE if small else None


def is_ineffective(record: CompactionRecord, trigger: float | None, settings: Settings) -> bool:
    """Whether ``record`` (settled, summarizing) bought nothing (see the module docstring)."""
    return criterion(record, trigger, settings) is not None


def headroom_turns(record: CompactionRecord, trigger: float) -> float | None:
    """The turns of the cycle's growth that fit between the context after ``record`` and
    the trigger; None when the growth or a size is unknown."""
    after, window, growth = record.tokens_after, record.window, record.growth_per_turn
    if after is None or not window or growth is None or growth <= 0:
        return None
    return (trigger * window - after) / growth


def refilled(record: CompactionRecord, following: CompactionRecord, settings: Settings) -> int:
    """How many calls saw ``record``'s context before ``following`` compacted again, when
    that is fewer than ``ineffective_min_turns`` (the turns it bought, counted); 0 when it
    is not (more calls, no call at all, a prune, a failure: nothing to count)."""
    if record.failed or record.mode is CompactionMode.PRUNE or not record.settled:
        return 0
    if following.mode is CompactionMode.PRUNE:
        return 0  # tool outputs cleared on their own schedule, not at the trigger
    calls = following.turn_index - record.turn_index
    return calls if 0 < calls < settings.ineffective_min_turns else 0


def bought_nothing(
    run: Sequence[CompactionRecord], index: int, trigger: float | None, settings: Settings
) -> bool:
    """Whether ``run[index]`` was ineffective: by its size after, or counted by the next
    compaction of the run (``refilled``)."""
    record = run[index]
    if is_ineffective(record, trigger, settings):
        return True
    following = next((r for r in run[index + 1 :] if r.mode is not CompactionMode.PRUNE), None)
    return following is not None and refilled(record, following, settings) > 0


def ineffective_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag a summarizing compaction that bought (almost) no turns."""
    record, s = ctx.record, ctx.settings
    trigger = trigger_fraction(ctx.run, s)
    found = criterion(record, trigger, s)
    before, after, window = record.tokens_before, record.tokens_after, record.window
    if found is None or before is None or after is None or not window:
        return None
    reclaimed = before - after
    if reclaimed > 0:
        what = f"reclaimed {reclaimed:,} tokens ({reclaimed / before:.1%}: {before:,} -> {after:,})"
    else:
        what = f"reclaimed nothing ({before:,} tokens before, {after:,} at the next call)"
    if found == AT_TRIGGER and trigger is not None:
        why = (
            f", yet the next call is still at or above the trigger ({after:,} tokens against "
            f"{round(trigger * window):,}, {share_text(after / window)} and "
            f"{share_text(trigger)} of the window)"
        )
    elif found == NO_ROOM and trigger is not None:
        room = headroom_turns(record, trigger) or 0.0
        why = (
            f", leaving {round(trigger * window) - after:,} tokens below the trigger "
            f"({round(trigger * window):,}): room for {room:.1f} more turns of the "
            f"{record.growth_per_turn or 0:,.0f} tokens a turn adds, so it buys fewer than "
            f"the {s.ineffective_min_turns:g} turns a compaction must buy"
        )
    elif reclaimed <= 0:
        why = ""
    else:
        why = f", less than {s.ineffective_min_reclaimed:.0%} of the context"
    reason = f"compaction at turn {record.turn_index} {what}{why}; {diagnosis(ctx)}"
    return ctx.finding(FindingKind.INEFFECTIVE_COMPACTION, "reclaimed", reason)


def refilled_compaction(ctx: DetectionContext, following: CompactionRecord) -> Finding | None:
    """Flag ``ctx.record`` (settled, not flagged yet) once ``following`` shows it bought
    fewer than ``ineffective_min_turns`` calls before the agent compacted again."""
    record, s = ctx.record, ctx.settings
    calls = refilled(record, following, s)
    after, window = record.tokens_after, record.window
    if not calls or after is None:
        return None
    at = f" at {following.tokens_before:,} tokens" if following.tokens_before else ""
    share = f", {share_text(after / window)} of the window" if window else ""
    plural = "s" * (calls != 1)
    reason = (
        f"compaction at turn {record.turn_index} bought {calls} turn{plural}: the agent "
        f"compacted again{at} after {calls} call{plural} on the {after:,} tokens it left"
        f"{share}, fewer than the {s.ineffective_min_turns:g} turns a compaction must buy; "
        f"{diagnosis(ctx)}"
    )
    return ctx.finding(FindingKind.INEFFECTIVE_COMPACTION, "refilled", reason)


def share_text(fraction: float) -> str:
    """A share of the window for a reason: two decimals, three below 0.1 (a 1M window's
    trigger at 35k tokens is 0.035, not 0.04)."""
    return f"{fraction:.2f}" if fraction >= 0.1 else f"{fraction:.3f}"


def diagnosis(ctx: DetectionContext) -> str:
    """Why the compaction could not reclaim more, from the sizes at hand, and what to do."""
    record, window = ctx.record, ctx.record.window or 0
    after = record.tokens_after or 0
    fixed, floor = ctx.fixed_tokens, ctx.floor_tokens
    if fixed is not None and window and fixed >= _EXPLAINS * after:
        # Measured from the prompt cache, the part ahead of the history can hold more than
        # the system prompt and tools (a first message the compaction kept): say what it is.
        return (
            f"the part ahead of the history, which the compaction left as it was (system "
            f"prompt, tool definitions, anything kept ahead of the summary), is {fixed:,} "
            f"tokens ({fixed / window:.2f} of the window): {REMEDY}"
        )
    trigger = trigger_fraction(ctx.run, ctx.settings)
    trigger_tokens = round(trigger * window) if trigger is not None else 0
    if fixed is not None and trigger_tokens > 0 and fixed >= _CLOSE * trigger_tokens:
        return _too_close(record, fixed, trigger_tokens)
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


def _too_close(record: CompactionRecord, fixed: int, trigger_tokens: int) -> str:
    """The diagnosis of a fixed part that takes half of the trigger or more."""
    room = max(trigger_tokens - fixed, 0)
    summary = "the summary"
    if record.summary_tokens:
        summary += f" ({record.summary_tokens:,} tokens)"
    return (
        f"the fixed part (system prompt and tool definitions, {fixed:,} tokens) is "
        f"{fixed / trigger_tokens:.2f} of the {trigger_tokens:,} tokens at which this "
        f"conversation compacts, so compaction works on the other {room:,} tokens only, "
        f"and {summary} with what it keeps fills them: {REMEDY}"
    )


INEFFECTIVE_DETECTOR = RuleDetector(
    FindingKind.INEFFECTIVE_COMPACTION, ineffective_compaction, needs_size_after=True
)
