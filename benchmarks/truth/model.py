"""What a generated run intended (its truth) and what the instrumentation reported.

The truth of a run is written by the scenario as it runs: every compaction it
performs, on which agent and call, how, and with which lineage; every call and the
agent that made it. The detectors' truths are derived from these records by
``benchmarks.truth.rules``; the observations are read from the spans by ``benchmarks.truth.run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNKNOWN = None
"""A truth value left open: the run gives no ground for either answer (scored as don't-care)."""


@dataclass
class CompactionTruth:
    """One compaction a scenario performed.

    Args:
        agent: the agent (one conversation) it belongs to.
        turn: the agent's call that first sees the compacted context (1-based), which is
            the call that carries it for a server-side compaction.
        mode: ``lossy``, ``extractive``, ``prune`` or ``server``.
        kind: how it was done: ``rewrite`` (task, summary, kept tail), ``whole`` (one
            summary message in place of the whole history), ``clear`` (tool results
            mutated in place), ``server`` (a compaction block or item).
        generation: the lineage generation (None for a prune or a failed summary).
        style: the summary's style when the instrumentation can read its text, else None.
        failed: the provider reported the summary step failed.
        pressure: fired because the context reached the agent's trigger (else on a schedule).
        trigger_tokens: the level it fired at: the agent's trigger at pressure, else the
            context before it.
        before_tokens: the context the agent would have sent without compacting.
        after_tokens: the server's count of the first call that sees the compacted context.
        boundary: the phase truth at the moment (``PhasePlan.boundary``).
        window: the model's context window of the run.
        kept_turns: turns kept verbatim.
        rereads: dropped calls the agent made again after it (``truth_agent``: rediscovery).
        reread_tokens: the tokens of their outputs.
    """

    agent: str
    turn: int
    mode: str
    kind: str
    generation: int | None
    style: str | None
    failed: bool
    pressure: bool
    trigger_tokens: int
    before_tokens: int
    window: int
    kept_turns: int = 0
    after_tokens: int | None = None
    boundary: bool | None = None
    expected: dict[str, bool | None] = field(default_factory=dict)
    """Each detector's truth on this compaction, filled by ``benchmarks.truth.rules.expect``."""
    rereads: int = 0
    reread_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call of a run: the agent that made it, its call number, its new tool content,
    and the server's count of its request."""

    agent: str
    turn: int
    content_tokens: int
    context_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ObservedCompaction:
    """A compaction span as the harness reads it."""

    agent: str | None
    turn: int
    mode: str
    generation: int | None
    tokens_after: int | None
    compaction_id: str
    findings: frozenset[str]
    rediscovery: tuple[int, int] | None = None
    """Calls and tokens its ``compaction.rediscovery`` span measured (None: no span)."""


@dataclass(frozen=True, slots=True)
class Observed:
    """What the instrumentation reported for one run."""

    compactions: tuple[ObservedCompaction, ...]
    conversations: tuple[str, ...]
    """The conversation id of each call, in call order."""
    errors: tuple[str, ...] = ()
    """Problems of the harness itself (a span count that does not match the calls)."""
    baselines: tuple[float, ...] = ()
    """Each conversation's rediscovery baseline (mean tokens at its ordinary points), where
    its rediscovery spans give one."""
