"""The debugging workloads: the boundary incident, the healthy run, two interleaved agents.

The boundary incident is docs/concepts.md#the-boundary-incident.

Plans are strings, one letter per turn (see :mod:`otel_compaction.demo.plan`):
explore with ``r``/``g``, hypothesize with ``t``, patch with ``e``, verify with
``v``. The compaction turns are part of each script.
"""

from __future__ import annotations

from collections.abc import Callable

from otel_compaction.demo.plan import Brief, ScriptedModel, Subject, phase_of, render_summary
from otel_compaction.demo.scenario import ScenarioContext
from otel_compaction.instrument import conversation, report_phase
from otel_compaction.semconv import PROVIDER_ANTHROPIC, PROVIDER_OPENAI

# --------------------------------------------------------------------------- #
# The boundary incident: a 40-turn debugging run, compacted at turn 30 or at turn 34.
# --------------------------------------------------------------------------- #

DEBUG_SUBJECT = Subject(
    files=(
        "tests/integration/test_orders.py",
        "src/orders/totals.py",
        "tests/fixtures/orders.json",
        "src/orders/rounding.py",
        "src/orders/parser.py",
        "tests/conftest.py",
    ),
    edits=("tests/fixtures/orders.json", "tests/conftest.py"),
)
DEBUG_SYSTEM = "You are a debugging agent. Use the tools to find the cause of a failure and fix it."
DEBUG_TASK = (
    "tests/integration/test_orders.py::test_total fails: 1049 != 1050. Find out why and fix it."
)
DEBUG_SIZES = {"read_file": 3400, "grep": 2400, "edit_file": 600, "run_tests": 2000}
NOTE_000_PLAN = "rrgrrrgrrrrg" + "trttrttrttrttrtt" + "erereeeevvvv"
"""Explore to turn 12, hypothesize to 28, the first edit on 29, patch, verify from 37."""
KEEP_TURNS = 6

_GOAL = "Make tests/integration/test_orders.py::test_total pass without breaking other tests."
SUMMARY_AT_30 = render_summary(
    Brief(
        goal=_GOAL,
        plan="Confirm which of the two suspects is wrong, patch it, re-run the integration tests.",
        decisions=["The total is off by exactly one cent: a rounding difference."],
        open_errors=["test_total: 1049 != 1050", "not yet known: totals helper or its input"],
        next_action="Patch the rounding in src/orders/totals.py.",
    )
)
SUMMARY_AT_34 = render_summary(
    Brief(
        goal=_GOAL,
        plan="Regenerate the stale fixture, re-run the integration tests.",
        decisions=[
            "The total is off by exactly one cent: a rounding difference.",
            "tests/fixtures/orders.json predates the rounding change (read on turns 2 and 8): "
            "it is stale; the totals helper is correct.",
            "Patch the fixture and tests/conftest.py, not the helper.",
        ],
        open_errors=["test_total fails until the fixture is regenerated"],
        next_action="Finish the fixture edit and run tests/integration.",
    )
)


def note000(compact_at: int, summary: str) -> Callable[[ScenarioContext], None]:
    """The incident's run, compacted by a history rewrite right before turn ``compact_at``."""

    def run(ctx: ScenarioContext) -> None:
        agent = ctx.agent(
            "debugger",
            ScriptedModel(NOTE_000_PLAN, DEBUG_SUBJECT),
            provider=PROVIDER_ANTHROPIC,
            system=DEBUG_SYSTEM,
            task=DEBUG_TASK,
            sizes=DEBUG_SIZES,
        )
        for turn in range(1, len(NOTE_000_PLAN) + 1):
            if turn == compact_at:
                agent.rewrite(summary, KEEP_TURNS)
            agent.step()

    return run


# --------------------------------------------------------------------------- #
# Healthy: sub-tasks one after the other, compacted server-side between them.
# --------------------------------------------------------------------------- #

HEALTHY_ID = "demo-healthy"
HEALTHY_PLAN = "rrgrrttrteeeevv" * 5
"""Five sub-tasks of 15 turns: explore, hypothesize, patch, verify."""
HEALTHY_COMPACTIONS = (31, 46, 61)
HEALTHY_SIZES = {"read_file": 3400, "grep": 2400, "edit_file": 1200, "run_tests": 2400}
REPORTED_CONFIDENCE = 0.85


def healthy_summary(subtask: int) -> str:
    """The server's summary when sub-task ``subtask`` begins."""
    return render_summary(
        Brief(
            goal="Fix the five failing checks of the release branch, one at a time.",
            plan=f"Sub-tasks 1 to {subtask - 1} are done; start sub-task {subtask}.",
            decisions=[f"Sub-task {n} fixed and verified." for n in range(1, subtask)],
            open_errors=[f"checks {subtask} to 5 still fail"],
            next_action=f"Read the failing test of sub-task {subtask}.",
        )
    )


def healthy(ctx: ScenarioContext) -> None:
    """Five sub-tasks, phases reported, compacted server-side after sub-tasks 2, 3 and 4."""
    compactions = {turn: healthy_summary(i + 2) for i, turn in enumerate(HEALTHY_COMPACTIONS)}
    agent = ctx.agent(
        "agent",
        ScriptedModel(HEALTHY_PLAN, DEBUG_SUBJECT, server_compactions=compactions),
        provider=PROVIDER_ANTHROPIC,
        system=DEBUG_SYSTEM,
        task="Five checks of the release branch fail. Fix them one at a time.",
        sizes=HEALTHY_SIZES,
        server_compaction=True,
    )
    with conversation(HEALTHY_ID):
        for turn in range(1, len(HEALTHY_PLAN) + 1):
            report_phase(phase_of(HEALTHY_PLAN, turn), confidence=REPORTED_CONFIDENCE)
            agent.step()


# --------------------------------------------------------------------------- #
# Two agents in one process, no ids, calls interleaved.
# --------------------------------------------------------------------------- #

PLAN_A = "rrgrrrgrrr" + "trttrtrt" + "eeeeeeee" + "vvvvvv"
"""Compacts at turn 25, in the middle of a settled patch phase: not flagged."""
PLAN_B = "rrgrrrgrrrgr" + "trttrttrt" + "ereeeeeevvv"
"""Compacts at turn 23, right after its first edit on turn 22: flagged."""
COMPACT_A, COMPACT_B = 25, 23


def two_agents(ctx: ScenarioContext) -> None:
    """An anthropic and an openai agent taking turns, no ids; each rewrites its history once."""
    a = ctx.agent(
        "anthropic-agent",
        ScriptedModel(PLAN_A, DEBUG_SUBJECT),
        provider=PROVIDER_ANTHROPIC,
        system=DEBUG_SYSTEM,
        task="tests/unit/test_invoice.py fails on the tax line. Find out why and fix it.",
        sizes=DEBUG_SIZES,
    )
    b = ctx.agent(
        "openai-agent",
        ScriptedModel(PLAN_B, DEBUG_SUBJECT),
        provider=PROVIDER_OPENAI,
        system=DEBUG_SYSTEM,
        task=DEBUG_TASK,
        sizes={**DEBUG_SIZES, "read_file": 5000},
    )
    summary = render_summary(
        Brief(
            goal="Make the failing test pass.",
            plan="Patch, then verify.",
            decisions=["The cause is known; the patch is under way."],
            open_errors=["the failing test"],
            next_action="Continue the patch.",
        )
    )
    for turn in range(1, max(len(PLAN_A), len(PLAN_B)) + 1):
        for agent, plan, at in ((a, PLAN_A, COMPACT_A), (b, PLAN_B, COMPACT_B)):
            if turn > len(plan):
                continue
            if turn == at:
                agent.rewrite(summary, KEEP_TURNS)
            agent.step()
