"""Verdicts: did each scenario produce exactly the findings it should?

A scenario passes when every agent's run became exactly one conversation, and
the findings of that conversation, as ``analyze`` reads them back from
``traces.jsonl`` and as the live instrumentation raised them, are exactly the
expected ones (kind and turn, in any order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from otel_compaction.demo.scenario import Scenario
from otel_compaction.model import Finding
from otel_compaction.report.model import FindingsReport

Marks = tuple[tuple[str, int], ...]
"""Findings as sorted ``(kind, turn)`` pairs."""


def marks(findings: Iterable[Finding]) -> Marks:
    """``(kind, turn)`` of each finding, sorted."""
    return tuple(sorted((f.kind.value, f.turn) for f in findings))


@dataclass(frozen=True, slots=True)
class AgentVerdict:
    """One agent's run: its conversation(s), and the findings expected and found."""

    agent: str
    conversations: tuple[str, ...]
    expected: Marks
    found: Marks
    live: Marks
    turns: int = 0
    compactions: int = 0

    @property
    def ok(self) -> bool:
        """One conversation, and both readings found exactly what was expected."""
        return len(self.conversations) == 1 and self.found == self.expected == self.live


@dataclass(frozen=True, slots=True)
class ScenarioVerdict:
    """A scenario's agents' verdicts and how long the run took."""

    scenario: Scenario
    agents: tuple[AgentVerdict, ...]
    seconds: float = 0.0
    error: str | None = None
    """The exception that stopped the run, if one did."""

    @property
    def ok(self) -> bool:
        """The run completed and every agent's verdict holds."""
        return self.error is None and all(a.ok for a in self.agents)


def judge(
    scenario: Scenario,
    conversations: Mapping[str, tuple[str, ...]],
    report: FindingsReport,
    live: Sequence[Finding],
    seconds: float = 0.0,
    error: str | None = None,
) -> ScenarioVerdict:
    """Compare what the scenario's agents produced with what it expects.

    Args:
        scenario: the scenario.
        conversations: agent name (``<scenario>/<agent>``) -> the conversation
            ids its spans carried.
        report: ``analyze``'s report of the demo's traces.
        live: every finding the instrumentation raised during the demo.
        seconds: the run's duration.
        error: what stopped the run before its end, if anything did.
    """
    by_id = {c.conversation_id: c for c in report.conversations}
    verdicts = []
    for expectation in scenario.expected:
        agent = f"{scenario.name}/{expectation.agent}"
        ids = conversations.get(agent, ())
        found = [f for cid in ids if cid in by_id for f in by_id[cid].findings]
        reports = [by_id[cid] for cid in ids if cid in by_id]
        verdicts.append(
            AgentVerdict(
                agent=agent,
                conversations=ids,
                expected=tuple(sorted((k.value, t) for k, t in expectation.findings)),
                found=marks(found),
                live=marks(f for f in live if f.conversation_id in ids),
                turns=sum(c.turn_count for c in reports),
                compactions=sum(len(c.compactions) for c in reports),
            )
        )
    return ScenarioVerdict(scenario, tuple(verdicts), seconds, error)


def describe(found: Marks) -> str:
    """``boundary_compaction@30``, ``reexpansion_livelock@[71, 74]``, or ``none``."""
    if not found:
        return "none"
    turns: dict[str, list[int]] = {}
    for kind, turn in found:
        turns.setdefault(kind, []).append(turn)
    parts = []
    for kind, at in turns.items():
        where = str(at[0]) if len(at) == 1 else "[" + ", ".join(str(t) for t in at) + "]"
        parts.append(f"{kind}@{where}")
    return ", ".join(parts)


def verdict_lines(verdicts: Sequence[ScenarioVerdict]) -> list[str]:
    """The verdict table: one line per agent, expected and found side by side."""
    rows = [("", "scenario / agent", "expected", "found")]
    for verdict in verdicts:
        if verdict.error is not None:
            rows.append(("FAIL", verdict.scenario.name, "-", f"the run failed: {verdict.error}"))
        for agent in verdict.agents:
            rows.append(
                (
                    "ok" if agent.ok else "FAIL",
                    agent.agent,
                    describe(agent.expected),
                    describe(agent.found) + _problems(agent),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [
        f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}".rstrip()
        for row in rows
    ]


def _problems(agent: AgentVerdict) -> str:
    notes = []
    if len(agent.conversations) != 1:
        notes.append(f"{len(agent.conversations)} conversations instead of 1")
    if agent.live != agent.found:
        notes.append(f"the live instrumentation found {describe(agent.live)}")
    return f"  ({'; '.join(notes)})" if notes else ""
