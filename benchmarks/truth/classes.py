"""The generated classes of the truth harness: one function per class, a few lines each.

A class is a function of a :class:`~benchmarks.truth.run.Run` that creates agents and drives
them; every compaction method of the agent records its own truth. To add a class::

    @truth_class("my_class", "one line: what it generates and why")
    def my_class(run: Run) -> None:
        agent = run.agent()
        agent.until_pressure()
        agent.rewrite(keep=run.rng.randint(0, 20), carry=False)
        agent.steps(3)

The run's shared parameters (wire, reported or inferred phases, summary style, window,
trigger) are drawn before the class runs; ``wires=`` limits the wires a class uses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.truth.agent import Agent
from benchmarks.truth.run import Run
from benchmarks.truth.wire import SERVER_WIRES, WIRES


@dataclass(frozen=True, slots=True)
class TruthClass:
    """A generated class: its name, what it is, the scenario, and the wires it may use."""

    name: str
    description: str
    build: Callable[[Run], None]
    wires: tuple[str, ...]


CLASSES: dict[str, TruthClass] = {}


def truth_class(
    name: str, description: str, wires: tuple[str, ...] = tuple(WIRES)
) -> Callable[[Callable[[Run], None]], Callable[[Run], None]]:
    """Register a class under ``name`` (the decorator of every class below)."""

    def register(build: Callable[[Run], None]) -> Callable[[Run], None]:
        CLASSES[name] = TruthClass(name, description, build, wires)
        return build

    return register


def _sized(run: Run, keep: int, low: int = 5, high: int = 8) -> tuple[int, int]:
    """Tool output sizes for cycles of about ``keep + low`` to ``keep + high`` turns."""
    budget = run.trigger_tokens - 900
    per_turn = budget // (keep + run.rng.randint(low, high))
    size = max(60, per_turn - 70)
    return (int(size * 0.85), int(size * 1.15))


def _cycles(agent: Agent, count: int, compact: Callable[[], None]) -> None:
    """``count`` times: work up to the trigger, then ``compact``; three calls after the last."""
    for _ in range(count):
        agent.until_pressure()
        compact()
    agent.steps(3)


def _keep(run: Run, most: int) -> int:
    """A kept tail of 0 to ``most`` turns; at most 6 on the openai wires.

    The openai SDK spends 1-3 ms per history item turning a request into JSON
    (``openai._utils._transform``), so an openai run with 20 kept turns costs ten times
    an Anthropic one; tails of 7 to 20 turns are generated on the Anthropic wires.
    """
    return run.rng.randint(0, most if run.wire.name == "anthropic" else min(most, 6))


@truth_class(
    "tail_rewrite",
    "task + a fresh summary + the last k turns verbatim (k in 0..20), at pressure, 2-3 times",
)
def tail_rewrite(run: Run) -> None:
    keep = _keep(run, 20)
    agent = run.agent(output_tokens=_sized(run, keep))
    _cycles(agent, run.rng.randint(2, 3), lambda: agent.rewrite(keep=keep, carry=False))


@truth_class(
    "carried_over",
    "task + a summary that carries the previous summary's text + the last k turns: "
    "generations 0, 1, 2, ...",
)
def carried_over(run: Run) -> None:
    keep = _keep(run, 8)
    agent = run.agent(output_tokens=_sized(run, keep))
    _cycles(agent, run.rng.randint(2, 4), lambda: agent.rewrite(keep=keep, carry=True))


@truth_class(
    "lineage_reset",
    "carried-over summaries, each compaction reset at random by the livelock incident's remedy "
    "(re-summarize from raw turns, drop the prior summary: generation 0)",
)
def lineage_reset(run: Run) -> None:
    keep = _keep(run, 6)
    agent = run.agent(output_tokens=_sized(run, keep))

    def reset_at_random() -> None:
        agent.rewrite(keep=keep, carry=run.rng.random() < 0.5)

    _cycles(agent, run.rng.randint(3, 5), reset_at_random)


@truth_class(
    "livelock_run",
    "the livelock incident: each summary carries the previous one plus re-derived "
    "constraints worth 30-45% of the budget left, under flat tool content",
)
def livelock_run(run: Run) -> None:
    keep = run.rng.randint(0, 2)
    size = _sized(run, keep, 12, 16)[1]
    agent = run.agent(output_tokens=(size, size))
    grow = run.rng.uniform(0.30, 0.45)
    _cycles(agent, run.rng.randint(6, 8), lambda: agent.rewrite(keep, carry=True, grow=grow))


@truth_class(
    "reset_run",
    "the livelock incident's reset run: the same agent re-summarizes from raw turns every time "
    "(flat intervals, generation 0 on every compaction)",
)
def reset_run(run: Run) -> None:
    keep = run.rng.randint(0, 2)
    size = _sized(run, keep, 8, 12)[1]
    agent = run.agent(output_tokens=(size, size))
    _cycles(agent, run.rng.randint(5, 6), lambda: agent.rewrite(keep=keep, carry=False))


@truth_class(
    "whole_history",
    "the whole history, task included, replaced by one summary message (nothing "
    "verbatim); fresh or carried over",
)
def whole_history(run: Run) -> None:
    agent = run.agent(output_tokens=_sized(run, 0))
    carry = run.rng.random() < 0.5
    _cycles(agent, run.rng.randint(2, 3), lambda: agent.replace_all(carry=carry))


@truth_class(
    "in_place_clearing",
    "old tool results cleared or cut to a quarter by mutating the same dict between "
    "calls (prune), then a summary at pressure",
)
def in_place_clearing(run: Run) -> None:
    keep = _keep(run, 4)
    agent = run.agent(output_tokens=_sized(run, keep, 10, 14))
    for _ in range(run.rng.randint(1, 3)):
        agent.steps(run.rng.randint(4, 7), stop_at_pressure=True)
        agent.clear(run.rng.randint(2, 4), shorten=run.rng.random() < 0.5)
    agent.until_pressure()
    agent.rewrite(keep=keep, carry=False)
    agent.steps(3)


@truth_class(
    "server_side",
    "server-side compaction at pressure: Anthropic compaction blocks (beta), OpenAI "
    "Responses compaction items; one Anthropic summary in five fails (content null)",
    wires=SERVER_WIRES,
)
def server_side(run: Run) -> None:
    agent = run.agent(output_tokens=_sized(run, 0))

    def compact() -> None:
        agent.server_compaction(failed=agent.wire.name == "anthropic" and run.rng.random() < 0.2)

    _cycles(agent, run.rng.randint(2, 3), compact)


@truth_class(
    "fixed_prefix",
    "system prompt and tools above the trigger: every compaction leaves the first call "
    "after it above the trigger (ineffective; two in a row: no-progress livelock)",
)
def fixed_prefix(run: Run) -> None:
    prefix = int(run.window * (run.trigger_fraction + run.rng.uniform(0.04, 0.08)))
    agent = run.agent(system=run.system_of(prefix), output_tokens=(100, 200))
    kinds = ["rewrite", "whole"] + (["server"] if agent.wire.can_compact_server_side else [])
    kind = run.rng.choice(kinds)
    for _ in range(run.rng.randint(3, 5)):
        agent.until_pressure()
        if kind == "rewrite":
            agent.rewrite(keep=0, carry=run.rng.random() < 0.5)
        elif kind == "whole":
            agent.replace_all(carry=run.rng.random() < 0.5)
        else:
            agent.server_compaction()
    agent.steps(2)


def _interleaved(run: Run, ids: bool) -> None:
    system = run.agent_defaults()["system"] if run.rng.random() < 0.5 else None
    agents, keep = [], {}
    for name in ("a", "b", "c")[: run.rng.randint(2, 3)]:
        options: dict[str, object] = {"system": system} if system else {}
        keep[name] = _keep(run, 6)
        options["output_tokens"] = _sized(run, keep[name])
        cid = f"conversation-{name}" if ids else None
        agents.append(run.agent(name, conversation_id=cid, **options))
    todo = {a.name: run.rng.randint(1, 2) for a in agents}
    whole = {a.name: run.rng.random() < 0.3 for a in agents}
    tail = dict.fromkeys(todo, 3)
    while any(tail.values()):
        agent = run.rng.choice([a for a in agents if tail[a.name]])
        if todo[agent.name] and agent.at_pressure() and agent.turns:
            todo[agent.name] -= 1
            agent.arm_boundary()
            if whole[agent.name]:
                agent.replace_all(carry=False)
            else:
                agent.rewrite(keep=keep[agent.name], carry=False)
        elif todo[agent.name]:
            agent.toward_pressure()
        else:
            agent.step()
            tail[agent.name] -= 1


@truth_class(
    "interleaved_ids",
    "two or three agents, their own tasks, calls interleaved at random, each call in "
    "`with conversation(id)`; each compacts 1-2 times (tail rewrite or whole history)",
)
def interleaved_ids(run: Run) -> None:
    _interleaved(run, ids=True)


@truth_class(
    "interleaved_no_ids",
    "the same without conversation ids; half the runs give all agents one system prompt",
)
def interleaved_no_ids(run: Run) -> None:
    _interleaved(run, ids=False)


@truth_class(
    "identical_replies",
    "two agents, same system prompt, task and model replies (tool-use ids included), "
    "different tool outputs, alternating in one thread; each compacts once keeping 1-6 turns",
)
def identical_replies(run: Run) -> None:
    run.boundary_chance = 0.0  # a forced phase switch would make the twins' replies differ
    seed = run.rng.random()
    shared = run.agent_defaults()
    keep = run.rng.randint(1, 6)
    size = _sized(run, keep)
    twins = [
        run.agent(
            name,
            system=shared["system"],
            task=shared["task"],
            replies=random.Random(seed),
            output_tokens=size,
            ids="twin",
        )
        for name in ("a", "b")
    ]
    done = {t.name: False for t in twins}
    for _ in range(3 * 60):
        for twin in twins:
            if not done[twin.name] and twin.at_pressure() and twin.calls > 1:
                twin.rewrite(keep=keep, carry=False)
                done[twin.name] = True
            twin.step()
        if all(done.values()):
            break
    for twin in twins:
        twin.steps(2)


@truth_class(
    "fresh_task",
    "one agent works up to the trigger and stops; a second starts its own task with the "
    "same system prompt, tools and model: two conversations, no compaction",
)
def fresh_task(run: Run) -> None:
    first = run.agent("a", output_tokens=_sized(run, 0))
    first.until_pressure()
    if run.rng.random() < 0.5:
        first.step()  # its last request is itself at pressure
    second = run.agent("b", system=first.system)
    second.steps(run.rng.randint(3, 8))


@truth_class(
    "short_run",
    "compaction on a schedule at low pressure: a first summary before turn 20; half the "
    "runs end a few calls later (a short run), half go on past turn 20 to a second summary "
    "(no short run: the run's length decides)",
)
def short_run(run: Run) -> None:
    agent = run.agent(output_tokens=(40, 80))
    keep = run.rng.randint(0, 4)
    agent.steps(run.rng.randint(5, 12))
    agent.rewrite(keep=keep, carry=False)
    if run.rng.random() < 0.5:
        agent.steps(run.rng.randint(2, max(2, 18 - agent.calls)))
        return
    agent.steps(max(3, 21 - agent.calls + run.rng.randint(0, 4)))
    agent.rewrite(keep=keep, carry=run.rng.random() < 0.5)
    agent.steps(3)


@truth_class(
    "extractive_rewrite",
    "every 6-10 turns, task + a summary that carries the previous one and quotes every "
    "replaced tool output verbatim + the last k turns: what was removed survives (extractive)",
)
def extractive_rewrite(run: Run) -> None:
    keep = _keep(run, 10)
    agent = run.agent(output_tokens=(60, 100))
    agent.steps(keep)
    for _ in range(run.rng.randint(2, 3)):
        agent.steps(run.rng.randint(6, 10), stop_at_pressure=True)
        agent.rewrite(keep=keep, carry=True, quote=True)
    agent.steps(3)
