"""Verdicts: exact findings, one conversation per agent, and live and analyze in agreement."""

from __future__ import annotations

from otel_compaction.demo import Expectation, Scenario
from otel_compaction.demo.verdict import describe, judge, verdict_lines
from otel_compaction.model import CompactionAnalysis, CompactionRecord, Finding
from otel_compaction.report.model import ConversationReport, FindingsReport
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind

BOUNDARY = FindingKind.BOUNDARY_COMPACTION
SCENARIO = Scenario(
    "s", "a test scenario", "inferred", (Expectation("agent", ((BOUNDARY, 30),)),), lambda _: None
)


def _finding(cid: str, turn: int, kind: FindingKind = BOUNDARY) -> Finding:
    return Finding(kind, cid, f"c{turn}", turn, "reason")


def _report(*ids: str) -> FindingsReport:
    return FindingsReport(tuple(ConversationReport(cid, (), ()) for cid in ids))


def _analysis(finding: Finding) -> CompactionAnalysis:
    record = CompactionRecord(
        compaction_id=finding.compaction_id,
        conversation_id=finding.conversation_id,
        turn_index=finding.turn,
        source=CompactionSource.INFERRED,
        mode=CompactionMode.LOSSY,
        trigger=None,
        tokens_before=None,
        tokens_after=None,
        summary_tokens=None,
        retained_tail_tokens=None,
        duplicated_tokens=None,
        carried_over_tokens=None,
        parent_id=None,
        root_id=finding.compaction_id,
        generation=0,
        cycle=None,
        token_fraction=None,
    )
    return CompactionAnalysis(record, None, None, (finding,))


def _with_findings(cid: str, *findings: Finding) -> FindingsReport:
    compactions = tuple(_analysis(f) for f in findings)
    return FindingsReport((ConversationReport(cid, (), compactions),))


def test_exact_findings_in_both_readings_pass() -> None:
    """The expected finding found by analyze and live: the verdict holds."""
    found = _finding("conv-1", 30)
    verdict = judge(SCENARIO, {"s/agent": ("conv-1",)}, _with_findings("conv-1", found), [found])
    assert verdict.ok
    assert verdict.agents[0].found == (("boundary_compaction", 30),)


def test_a_finding_at_another_turn_fails() -> None:
    """The right kind at the wrong turn is not the expected finding."""
    found = _finding("conv-1", 31)
    verdict = judge(SCENARIO, {"s/agent": ("conv-1",)}, _with_findings("conv-1", found), [found])
    assert not verdict.ok


def test_an_extra_finding_fails() -> None:
    """Exactly the expected findings: one more, of any kind, fails the verdict."""
    found = (_finding("conv-1", 30), _finding("conv-1", 40, FindingKind.LOST_TASK))
    verdict = judge(SCENARIO, {"s/agent": ("conv-1",)}, _with_findings("conv-1", *found), found)
    assert not verdict.ok


def test_live_and_analyze_must_agree() -> None:
    """A finding analyze reads back but the live instrumentation never raised fails, and says so."""
    found = _finding("conv-1", 30)
    verdict = judge(SCENARIO, {"s/agent": ("conv-1",)}, _with_findings("conv-1", found), [])
    assert not verdict.ok
    assert "the live instrumentation found none" in verdict_lines([verdict])[1]


def test_an_agent_split_over_two_conversations_fails() -> None:
    """One agent whose spans carry two conversation ids fails even with no findings expected."""
    clean = Scenario("s", "t", "inferred", (Expectation("agent"),), lambda _: None)
    verdict = judge(clean, {"s/agent": ("conv-1", "conv-2")}, _report("conv-1", "conv-2"), [])
    assert not verdict.ok
    assert "2 conversations instead of 1" in verdict_lines([verdict])[1]


def test_describe_groups_turns_by_kind() -> None:
    """Findings read as kind@turn, several turns of one kind as a list; none as none."""
    assert describe(()) == "none"
    assert describe((("boundary_compaction", 30),)) == "boundary_compaction@30"
    marks = (("reexpansion_livelock", 71), ("reexpansion_livelock", 73))
    assert describe(marks) == "reexpansion_livelock@[71, 73]"
