"""Each detector's truth on each generated compaction, from what the scenario intended.

The rules are the project's (docs/concepts.md: the boundary and livelock incidents,
short runs, the preserve-schema, and the vendors' guards), applied to the quantities the
generator knows exactly: the agent's own call numbers, the sizes the server counted, the
phase plan, the summary it wrote. A value is ``None`` (no truth, scored as don't-care)
where the generated quantity sits within a margin of a threshold, so that two honest token
estimates could disagree. Every definition is one function; docs/detection.md states them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from benchmarks.truth.model import CompactionTruth
from benchmarks.truth.text import FULL_COVERAGE_STYLES

BOUNDARY = "boundary_compaction"
LIVELOCK = "reexpansion_livelock"
INEFFECTIVE = "ineffective_compaction"
SHORT_RUN = "short_run_compaction"
SCHEMA = "summary_schema_coverage"
LOST_TASK = "lost_task"
KINDS = (BOUNDARY, LIVELOCK, INEFFECTIVE, SHORT_RUN, SCHEMA, LOST_TASK)

PRESSURE = 0.65
"""The boundary incident's pressure threshold (share of the window)."""
SHORT_RUN_TURNS = 20
MARGIN = 0.03
"""Share of the window within which a size is too close to a threshold to be a truth."""
SHRINK = 0.20
FLAT = 0.15
FLAT_MARGIN = 0.03
THRASHING_TURNS = 3
THRASHING_COUNT = 3
CADENCE_INTERVALS = 4
NO_PROGRESS_RUN = 2
"""Ineffective compactions in a row that make a no-progress livelock;
also the calls a compaction must buy."""
MIN_RECLAIMED = 0.05
"""The share of the context a compaction on a schedule must reclaim."""
RECLAIMED_MARGIN = 0.01
"""Within this of ``MIN_RECLAIMED`` (or within ``MARGIN`` of the window in tokens) a
scheduled compaction's share has no truth."""


def expect(
    truths: Sequence[CompactionTruth], content: dict[int, int], contexts: dict[int, int]
) -> None:
    """Fill ``expected`` of one agent's compactions (in order); ``content`` (new tool
    content) and ``contexts`` (the server's count of the request) by call number."""
    summaries: list[CompactionTruth] = []
    last_call = max(contexts, default=0)
    for index, truth in enumerate(truths):
        truth.expected[INEFFECTIVE] = ineffective(truth, truths[index + 1 :], contexts)
        truth.expected[BOUNDARY] = boundary(truth)
        truth.expected[SCHEMA] = schema_gap(truth)
        truth.expected[LOST_TASK] = truth.failed
        if truth.mode == "prune":
            truth.expected[SHORT_RUN] = False
            truth.expected[LIVELOCK] = False
            continue
        truth.expected[SHORT_RUN] = short_run(truth, first=not summaries, run_turns=last_call)
        summaries.append(truth)
        truth.expected[LIVELOCK] = livelock(summaries, content)


def ineffective(
    t: CompactionTruth, later: Sequence[CompactionTruth], contexts: dict[int, int]
) -> bool | None:
    """The compaction bought fewer than two calls, counted: the first call that sees the
    compacted context is at or above the trigger, or the next compaction comes one call
    later, or (none follows) the second call reaches the trigger. A compaction on a
    schedule (below the trigger) is judged by its share: under 5% of the context.

    ``contexts`` are the server's counts of this agent's requests by call number; the
    agent compacts when its next request would reach the trigger."""
    if t.after_tokens is None or t.failed or t.mode == "prune":
        return False if t.mode == "prune" else None
    following = next((u for u in later if u.mode != "prune"), None)
    calls = following.turn - t.turn if following is not None else None
    if calls is not None and calls < NO_PROGRESS_RUN:
        return True
    margin = MARGIN * t.window
    if not t.pressure:
        # The size before a client-side rewrite is an estimate: a margin in tokens too.
        share = (t.before_tokens - t.after_tokens) / t.before_tokens
        short = MIN_RECLAIMED * t.before_tokens - (t.before_tokens - t.after_tokens)
        if abs(share - MIN_RECLAIMED) < RECLAIMED_MARGIN or abs(short) < margin:
            return None
        return share < MIN_RECLAIMED
    if t.after_tokens >= t.trigger_tokens + margin:
        return True
    if t.after_tokens >= t.trigger_tokens - margin:
        return None
    second = contexts.get(t.turn + 1)
    if calls is None:
        if second is None:
            return None  # the run ended at once: nothing counts the calls it bought
        if second >= t.trigger_tokens + margin:
            return True  # the agent would have compacted again at once; the run stopped
    if second is not None and second >= t.trigger_tokens - margin:
        return None  # two calls, the second close to the trigger: an estimate may say one
    return False


def boundary(t: CompactionTruth) -> bool | None:
    """A summarizing compaction (lossy or server) at pressure, straddling after a held phase.

    A failed one counts too: the generator's failed summaries still replace the context
    (the provider's ``content: null``), so the evidence is gone all the same."""
    if t.mode not in ("lossy", "server"):
        return False
    fraction = t.before_tokens / t.window
    if fraction < PRESSURE - MARGIN:
        return False
    if fraction < PRESSURE + MARGIN:
        return None
    return t.boundary


def schema_gap(t: CompactionTruth) -> bool:
    """The summary's text is visible and covers too little of the preserve schema."""
    return t.style is not None and not t.failed and t.style not in FULL_COVERAGE_STYLES


def short_run(t: CompactionTruth, first: bool, run_turns: int) -> bool | None:
    """The first summarizing compaction of a run that ended under 20 turns (its agent's
    last call), while the context was still small.

    A short run that compacts at pressure (a large history, e.g. a
    subagent whose first request is 170k tokens) is not the note's mistake; "small" is
    below the pressure threshold. A run is short by the turn it *ended* at; a
    compaction at turn 11 of a 40-turn run is no short run's.
    """
    if not first or t.turn >= SHORT_RUN_TURNS or run_turns >= SHORT_RUN_TURNS:
        return False
    fraction = t.before_tokens / t.window
    if abs(fraction - PRESSURE) < MARGIN:
        return None
    return fraction < PRESSURE


def livelock(summaries: Sequence[CompactionTruth], content: dict[int, int]) -> bool | None:
    """The livelock incident's cadence, Claude Code's thrashing, or two ineffective in a row."""
    turns = [t.turn for t in summaries]
    intervals = [b - a for a, b in pairwise(turns)]
    thrashing = len(intervals) >= THRASHING_COUNT and all(
        i <= THRASHING_TURNS for i in intervals[-THRASHING_COUNT:]
    )
    run = [t.expected[INEFFECTIVE] for t in summaries[-NO_PROGRESS_RUN:]]
    no_progress = len(run) == NO_PROGRESS_RUN and all(run)
    unsure = len(run) == NO_PROGRESS_RUN and False not in run and None in run
    cadence = _cadence(turns, intervals, content)
    if thrashing or no_progress or cadence:
        return True
    return None if cadence is None or unsure else False


def _cadence(turns: list[int], intervals: list[int], content: dict[int, int]) -> bool | None:
    """The livelock incident's cadence: the last four intervals shrink by over 20% each."""
    if len(intervals) < CADENCE_INTERVALS:
        return False
    recent = intervals[-CADENCE_INTERVALS:]
    if not all(a > 0 and (a - b) / a > SHRINK for a, b in pairwise(recent)):
        return False
    starts = turns[-CADENCE_INTERVALS - 1 : -1]
    per_turn = []
    for start, length in zip(starts, recent, strict=True):
        cycle = [content.get(call, 0) for call in range(start, start + length)]
        per_turn.append(sum(cycle) / length)
    mean = sum(per_turn) / len(per_turn)
    spread = (max(per_turn) - min(per_turn)) / mean if mean > 0 else 0.0
    if abs(spread - FLAT) < FLAT_MARGIN:
        return None
    return spread <= FLAT
