"""The livelock incident as a migration agent: the re-expansion livelock and its reset twin.

The incident is docs/concepts.md#the-livelock-incident.

The same agent and workload twice: it edits one adapter per turn (flat load)
and compacts through an LLM summarizer inside a ``compaction()`` block. In the
livelock the summarizer restates the previous summary and re-derives the
constraints once more each time; in the twin it sees only raw turns and the
constraints are pinned in the system prompt.
"""

from __future__ import annotations

from otel_compaction.demo.plan import (
    Brief,
    ScriptedModel,
    Subject,
    Summarizer,
    filler,
    prior_summary,
    render_summary,
    words_of,
)
from otel_compaction.demo.scenario import ScenarioContext
from otel_compaction.instrument import conversation
from otel_compaction.semconv import PROVIDER_OPENAI

LIVELOCK_ID = "demo-note004-livelock"
RESET_ID = "demo-note004-lineage-reset"
MIGRATION_SUBJECT = Subject(
    files=("src/storage/base.py", "src/storage/v2.py", "docs/migration.md"),
    edits=tuple(f"src/storage/adapters/adapter_{n:02d}.py" for n in range(40)),
    pattern="StorageClient",
)
MIGRATION_SYSTEM = "You are a migration agent. Apply the change file by file with the tools."
CONSTRAINTS = (
    "Keep every public signature. Do not touch the v1 shims. Preserve retry semantics. "
    "Never log credentials. Keep adapters importable on Python 3.11."
)
MIGRATION_TASK = f"Migrate the 40 storage adapters to the v2 client API. Constraints: {CONSTRAINTS}"
MIGRATION_SIZES = {"read_file": 2000, "grep": 1600, "edit_file": 6000, "run_tests": 1600}
MIGRATION_PLAN = "rrgrrrr" + "e" * 120
LIVELOCK_INTERVALS = (9, 9, 9, 9, 7, 5, 3, 2, 2, 2)
"""Turns between its 11 compactions: about 9 at first, 2 at the end."""
LIVELOCK_COMPACTIONS = tuple(20 + sum(LIVELOCK_INTERVALS[:i]) for i in range(11))
LIVELOCK_TURNS = LIVELOCK_COMPACTIONS[-1] + 1
KEEP_TAIL = 3
RESTATED_CHARS = 1000
RESET_COMPACTIONS = (20, 31, 41, 53, 62)
"""Intervals 11, 10, 12 and 9 turns: the incident's run after the fix."""
RESET_TURNS = 66
_NOTES = words_of(
    "adapter migrated to v2 client retry wrapper kept signature unchanged shim untouched "
    "tests green credentials redacted import path updated pagination cursor mapped"
)


def _migration_brief(n: int) -> Brief:
    """The preserve-schema part of the migration's ``n``-th summary."""
    return Brief(
        goal="Migrate the 40 storage adapters to the v2 client API.",
        plan="One adapter per turn, in order; run the adapter tests at the end.",
        decisions=[f"Compaction {n}: adapters so far migrated with the retry wrapper kept."],
        open_errors=["none"],
        next_action="Edit the next adapter.",
    )


def livelock_summary(number: int, text: str) -> str:
    """The livelock's summarizer: restates the previous summary, and the constraints again.

    Unsure whether the earlier summaries kept the constraints, it re-derives
    them once more per earlier compaction, from text that already restates
    them: the restatement grows every cycle (the livelock's dominant term).
    """
    prior = prior_summary(text)
    restated = f"## Earlier summary (restated)\n{prior}\n" if prior else ""
    notes = filler(f"livelock/{number}", 600, _NOTES)
    constraints = "".join(
        f"## Constraints (re-derived, {i + 1} of {number})\n{CONSTRAINTS} "
        f"{filler(f'constraints/{number}/{i}', RESTATED_CHARS, _NOTES)}\n"
        for i in range(number)
    )
    return render_summary(
        _migration_brief(number), f"{restated}## Work notes\n{notes}\n{constraints}"
    )


def reset_summary(number: int, text: str) -> str:
    """The twin's summarizer: raw turns only, constraints pinned in the system prompt."""
    del text
    notes = filler(f"reset/{number}", 600, _NOTES)
    return render_summary(_migration_brief(number), f"## Work notes\n{notes}\n")


def _migration(
    ctx: ScenarioContext, summarize: Summarizer, system: str, schedule: tuple[int, ...], turns: int
) -> None:
    """Run the migration agent for ``turns`` turns, compacting before each scheduled turn."""
    model = ScriptedModel(MIGRATION_PLAN, MIGRATION_SUBJECT, summarize=summarize)
    agent = ctx.agent(
        "migrator",
        model,
        provider=PROVIDER_OPENAI,
        system=system,
        task=MIGRATION_TASK,
        sizes=MIGRATION_SIZES,
    )
    carry = summarize is livelock_summary  # the twin's summarizer never sees the prior summary
    for turn in range(1, turns + 1):
        if turn in schedule:
            agent.summarize(keep_turns=KEEP_TAIL, carry_summary=carry)
        agent.step()


def livelock(ctx: ScenarioContext) -> None:
    """The livelock: 11 summary-of-summary compactions, intervals 9 down to 2."""
    with conversation(LIVELOCK_ID):
        _migration(ctx, livelock_summary, MIGRATION_SYSTEM, LIVELOCK_COMPACTIONS, LIVELOCK_TURNS)


def lineage_reset(ctx: ScenarioContext) -> None:
    """The fix: lineage reset, constraints pinned; intervals 11, 10, 12, 9."""
    system = f"{MIGRATION_SYSTEM}\nConstraints (pinned): {CONSTRAINTS}"
    with conversation(RESET_ID):
        _migration(ctx, reset_summary, system, RESET_COMPACTIONS, RESET_TURNS)
