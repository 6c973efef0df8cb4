"""Scripted 40-turn agents through the real anthropic client reproduce the boundary and the
livelock incidents of docs/concepts.md.

No phases are reported and no compaction is recorded explicitly: the phase is
inferred from the tool calls, each compaction from the rewritten history.
"""

from __future__ import annotations

from typing import Any

import pytest

from otel_compaction import conversation, report_phase
from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.semconv import FindingKind
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.instrument.conftest import MODEL, anthropic_client, compaction_attrs

TURNS = 40
SUMMARY = (
    "Goal: make the integration test pass. Plan: read, hypothesize, patch, verify. "
    "Decisions: none yet. Open errors: the assertion in test_checkout. Next action: continue."
)


def _debugging_tool(turn: int) -> ToolCall | None:
    """The boundary incident's run: reads, then reasoning without tools, then edits, then tests."""
    if turn <= 18:
        name = "read_file" if turn % 2 else "grep"
        return ToolCall(name, {"path": f"src/module_{turn}.py"})
    if turn <= 28:
        return None
    if turn <= 38:
        return ToolCall("edit_file", {"path": "tests/conftest.py", "patch": "fixture"})
    return ToolCall("bash", {"command": "pytest tests/test_integration.py -x"})


class DebuggingModel:
    """The scripted model of the boundary incident: its n-th answer makes turn n's tool call."""

    def __init__(self) -> None:
        self.turn = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        self.turn += 1
        call = _debugging_tool(self.turn)
        if call is None:
            return Reply("Hypothesis: the checkout fixture is stale. " * 4)
        return Reply("", tool_calls=(call,))


class DebuggingAgent:
    """The boundary incident's agent: one lossy summary compaction (two messages kept)."""

    def __init__(self, compact_at: int) -> None:
        self.compact_at = compact_at
        self.client = anthropic_client(FakeLLMAPI(DebuggingModel()))
        self.messages: list[Any] = [{"role": "user", "content": "The integration test fails."}]

    def run(self) -> None:
        for turn in range(1, TURNS + 1):
            if turn == self.compact_at:
                summary = {"role": "user", "content": SUMMARY}
                self.messages = [self.messages[0], summary, *self.messages[-2:]]
            _step(self.client, "You are a debugging agent.", self.messages, 1200)


def _step(client: Any, system: str, messages: list[Any], output_chars: int) -> int:
    """One agent turn: call, append the answer and the tool results; returns the context size."""
    message = client.messages.create(model=MODEL, max_tokens=256, system=system, messages=messages)
    messages.append({"role": "assistant", "content": message.content})
    uses = [b for b in message.content if b.type == "tool_use"]
    results = [
        {"type": "tool_result", "tool_use_id": u.id, "content": "x" * output_chars} for u in uses
    ]
    messages.append({"role": "user", "content": results or "Continue."})
    return int(message.usage.input_tokens)


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 10_500})])
def test_note_000_compaction_at_the_phase_boundary_is_flagged(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Lossy compaction at turn 30, while hypothesize turns into patch: boundary_compaction."""
    DebuggingAgent(compact_at=30).run()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == 30
    assert compaction[sc.COMPACTION_MODE] == "lossy"
    assert compaction[sc.PRESSURE_TOKEN_FRACTION] >= 0.65
    assert compaction[sc.PHASE_TRANSITION_LIKELIHOOD] > 0.35
    assert compaction[sc.FLAG_BOUNDARY] is True
    assert "transition likelihood" in compaction[sc.FLAG_REASON]
    boundary = [f for f in cap.findings if f.kind is FindingKind.BOUNDARY_COMPACTION]
    assert [f.turn for f in boundary] == [30]


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 10_500})])
def test_note_000_twin_compacting_at_turn_34_is_not_flagged(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The same run compacting at turn 34, settled in patch, raises no boundary finding."""
    DebuggingAgent(compact_at=34).run()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == 34
    assert compaction[sc.PHASE_NAME] == "patch"
    assert compaction[sc.PRESSURE_TOKEN_FRACTION] >= 0.65
    assert sc.FLAG_BOUNDARY not in compaction
    assert not [f for f in cap.findings if f.kind is FindingKind.BOUNDARY_COMPACTION]


NOTE_000_REPORTS = {
    28: (
        "hypothesize",
        {"hypothesize": 0.81, "patch": 0.0633, "explore": 0.0633, "verify": 0.0634},
    ),
    30: ("hypothesize", {"hypothesize": 0.48, "patch": 0.44, "explore": 0.05, "verify": 0.03}),
    31: ("patch", {"patch": 0.63, "hypothesize": 0.1233, "explore": 0.1233, "verify": 0.1234}),
    34: ("patch", {"patch": 0.88, "hypothesize": 0.04, "explore": 0.04, "verify": 0.04}),
}


class IncidentAgent(DebuggingAgent):
    """The boundary incident: at the compaction, turns 3 to 18 (where the tool outputs that tie
    the assertion to the fixture are) are summarized away, turns 19 on kept verbatim."""

    def __init__(self, compact_at: int, *, report: bool) -> None:
        super().__init__(compact_at)
        self.report = report

    def run(self) -> None:
        with conversation("note-000-incident"):
            for turn in range(1, TURNS + 1):
                if self.report and turn in NOTE_000_REPORTS:
                    name, distribution = NOTE_000_REPORTS[turn]
                    report_phase(name, distribution=distribution)
                if turn == self.compact_at:
                    # messages: the task, then (assistant, result) per turn: turn n at 2n-1, 2n
                    summary = {"role": "user", "content": SUMMARY}
                    self.messages = [*self.messages[:5], summary, *self.messages[37:]]
                _step(self.client, "You are a debugging agent.", self.messages, 1200)


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 10_500})])
@pytest.mark.parametrize("report", [True, False], ids=["reported", "inferred"])
@pytest.mark.parametrize(("compact_at", "flagged"), [(30, True), (34, False)])
def test_note_000_incident_shape_flagged_at_30_not_at_34(
    cap: Capture,
    instrumented: CompactionInstrumentor,
    report: bool,
    compact_at: int,
    flagged: bool,
) -> None:
    """Turns 3 to 18 dropped, 19 on kept verbatim: lossy, whatever the kept tail; flagged at
    the hypothesize -> patch boundary (turn 30), not once patch has settled (turn 34), with
    the phases reported as in the boundary incident and with the phases inferred from the
    tool calls."""
    IncidentAgent(compact_at, report=report).run()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == compact_at
    assert compaction[sc.COMPACTION_MODE] == "lossy"
    assert compaction[sc.TOKENS_RETAINED_TAIL] > 0  # a long verbatim tail, still lossy
    assert compaction[sc.PRESSURE_TOKEN_FRACTION] >= 0.65
    assert (compaction.get(sc.FLAG_BOUNDARY) is True) is flagged
    boundary = [f for f in cap.findings if f.kind is FindingKind.BOUNDARY_COMPACTION]
    assert [f.turn for f in boundary] == ([compact_at] if flagged else [])
    if flagged:
        reason = compaction[sc.FLAG_REASON]
        assert "hypothesize held until turn" in reason
        assert "kept" in reason
        assert "verbatim" in reason


CONSTRAINTS = (
    "Constraints: keep the public API stable; no new dependencies; tests must stay green. "
)
WINDOW_004 = 2900


class CompactingAgent:
    """The livelock incident's agent: compacts at 85% of the window; summaries carry the last."""

    def __init__(self, reset_lineage: bool) -> None:
        self.reset = reset_lineage
        read = Reply("", tool_calls=(ToolCall("read_file", {"path": "billing.py"}),))
        self.client = anthropic_client(FakeLLMAPI(default=read))
        self.system = "You are a coding agent." + (" " + CONSTRAINTS if reset_lineage else "")
        self.task = {"role": "user", "content": "Port the billing module to the new API."}
        self.summary = ""

    def _summarize(self, cycle: int) -> str:
        if self.reset:  # lineage reset: from the raw turns only, constraints pinned in the system
            return f"Goal: port billing. Plan: module by module. Decisions: part {cycle} done."
        restated = "Restated constraints and decisions. " * int(7 * 1.6**cycle)
        return f"{self.summary} {CONSTRAINTS}{restated}Cycle {cycle}: ported part {cycle}.".strip()

    def run(self) -> None:
        messages: list[Any] = [self.task]
        context, cycle = 0, 0
        for _ in range(TURNS):
            if context >= 0.85 * WINDOW_004:
                cycle += 1
                self.summary = self._summarize(cycle)
                messages = [self.task, {"role": "user", "content": self.summary}, *messages[-2:]]
            context = _step(self.client, self.system, messages, 1200)


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: WINDOW_004})])
def test_note_004_summary_of_summary_compactions_are_flagged_as_livelock(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """11 summary-of-summary compactions, intervals shrinking: reexpansion_livelock."""
    CompactingAgent(reset_lineage=False).run()
    compactions = compaction_attrs(cap)
    assert len(compactions) == 11
    assert [c[sc.LINEAGE_GENERATION] for c in compactions] == list(range(11))
    intervals = [c[sc.CYCLE_INTERVAL_TURNS] for c in compactions[1:]]
    assert intervals == sorted(intervals, reverse=True)
    assert intervals[0] > 3 * intervals[-1]
    flagged = [c for c in compactions if c.get(sc.FLAG_LIVELOCK)]
    assert flagged
    assert "cadence accelerating" in flagged[0][sc.FLAG_REASON]
    # The re-expansion residual of every cycle longer than one turn (a one-turn cycle grows
    # by its new content alone: the summary's growth is already in the size after).
    assert all(
        c[sc.CYCLE_RESIDUAL_TOKENS] > 0 for c in compactions[1:] if c[sc.CYCLE_INTERVAL_TURNS] > 1
    )
    # Late in the run the summaries outgrow what they replace: the next call is larger than
    # the context before, and those compactions are ineffective.
    grew = [c for c in compactions if c[sc.TOKENS_AFTER] > c[sc.TOKENS_BEFORE]]
    assert grew
    assert all(c.get(sc.FLAG_INEFFECTIVE) for c in grew)
    livelock = [f for f in cap.findings if f.kind is FindingKind.REEXPANSION_LIVELOCK]
    assert livelock[0].turn == flagged[0][sc.TURN_INDEX]
    gauge = cap.metric_points(sc.METRIC_LIVELOCKED.name)
    assert [p.value for p in gauge] == [1]


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: WINDOW_004})])
def test_note_004_lineage_reset_twin_is_not_flagged(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Lineage reset, constraints pinned: fewer compactions, stable intervals, no flag."""
    CompactingAgent(reset_lineage=True).run()
    compactions = compaction_attrs(cap)
    assert 2 <= len(compactions) <= 5
    intervals = [c[sc.CYCLE_INTERVAL_TURNS] for c in compactions[1:]]
    assert max(intervals) - min(intervals) <= 2
    assert not any(c.get(sc.FLAG_LIVELOCK) for c in compactions)
    assert not [f for f in cap.findings if f.kind is FindingKind.REEXPANSION_LIVELOCK]
    # Each summary is written from the raw turns, the previous one dropped: a reset each time.
    assert [c[sc.LINEAGE_GENERATION] for c in compactions] == [0] * len(compactions)
