"""Other instrumentations, driven for real: the processor judges compactions in their spans.

A scripted compacting agent (``driver.py``) runs under each instrumentation in its
own environment (``tests/frameworks/venvs``) against the fake model server on
loopback; its spans, encoded by the OTLP exporter's encoder, go through the
processor's reading and engine (``runs.judge``, as the pipeline feeds them).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.semconv import FindingKind
from tests.dialects.runs import Server, Verdict, judge, run_agent

# (instrumentation, venv, api, driver options)
INSTRUMENTATIONS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "genai_official": ("genai_official", "genai_official", "openai", {}),
    "openllmetry_openai": ("openllmetry_openai", "openllmetry", "openai", {}),
    "openllmetry_anthropic+sdk": (
        "openllmetry_anthropic",
        "openllmetry",
        "anthropic",
        {"sdk_spans": True},
    ),
    "anthropic_sdk": ("anthropic_sdk", "openllmetry", "anthropic", {"conversation_id": "conv-7"}),
    "openinference": ("openinference", "openinference", "openai", {"session_id": "sess-1"}),
}
STEPS = {"healthy": 34, "stuck": 12, "livelock": 48}
INFERRED = "compaction inferred from GenAI telemetry"


@cache
def _run(name: str, variant: str, capture: bool, tmp: Path) -> tuple[Verdict, Server]:
    instrumentation, venv, api, extra = INSTRUMENTATIONS[name]
    data, server = run_agent(
        instrumentation,
        venv,
        tmp,
        api=api,
        variant="healthy" if variant == "livelock" else variant,
        capture=capture,
        steps=STEPS[variant],
        growing=variant == "livelock",
        extra=extra,
    )
    return judge(data), server


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the runs' exported spans."""
    return tmp_path_factory.mktemp("dialects")


def _kinds(verdict: Verdict) -> set[FindingKind]:
    return {f.kind for f in verdict.findings}


@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
@pytest.mark.parametrize("name", list(INSTRUMENTATIONS))
def test_healthy_agent_compactions_at_the_right_turns_and_no_finding(
    name: str, capture: bool, tmp: Path
) -> None:
    """A healthy agent: one conversation, one turn per call, a compaction where it compacted."""
    verdict, server = _run(name, "healthy", capture, tmp)
    assert len(verdict.conversations) == 1
    assert verdict.turns == server.agent_calls == STEPS["healthy"]
    # A compaction's turn is the first call that sees the compacted context.
    assert [turn for _, turn, _ in verdict.compactions] == [n + 1 for n in server.compacted_at]
    assert len(server.compacted_at) >= 2
    assert verdict.findings == []


@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
@pytest.mark.parametrize("name", list(INSTRUMENTATIONS))
def test_stuck_agent_is_flagged_ineffective_with_the_evidence(
    name: str, capture: bool, tmp: Path
) -> None:
    """A system prompt above the trigger: every compaction is ineffective, and thrashing."""
    verdict, server = _run(name, "stuck", capture, tmp)
    assert verdict.turns == server.agent_calls
    assert len(verdict.compactions) == len(server.summaries) - 1  # the last: no call after it
    assert FindingKind.INEFFECTIVE_COMPACTION in _kinds(verdict)
    assert FindingKind.REEXPANSION_LIVELOCK in _kinds(verdict)
    ineffective = [f for f in verdict.findings if f.kind is FindingKind.INEFFECTIVE_COMPACTION]
    assert all(INFERRED in f.reason and "reclaimed nothing" in f.reason for f in ineffective)


@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
@pytest.mark.parametrize("name", list(INSTRUMENTATIONS))
def test_accelerating_compactions_are_flagged_as_livelock(
    name: str, capture: bool, tmp: Path
) -> None:
    """Each summary carrying the previous one whole: the cadence accelerates, flagged."""
    verdict, server = _run(name, "livelock", capture, tmp)
    assert verdict.turns == server.agent_calls
    rules = {f.rule for f in verdict.findings if f.kind is FindingKind.REEXPANSION_LIVELOCK}
    assert "cadence" in rules
    cadence = next(f for f in verdict.findings if f.rule == "cadence")
    assert "accelerating" in cadence.reason
    assert INFERRED in cadence.reason


@pytest.mark.parametrize("name", ["genai_official", "openllmetry_openai", "openinference"])
def test_summaries_chain_into_one_lineage_when_content_is_captured(name: str, tmp: Path) -> None:
    """With content, each livelock summary continues the one before; healthy ones start anew."""
    verdict, _ = _run(name, "livelock", True, tmp)
    assert verdict.generations[:4] == [0, 1, 2, 3]
    healthy, _ = _run(name, "healthy", True, tmp)
    assert healthy.generations
    assert set(healthy.generations) == {0}


def test_two_instrumentations_of_one_call_count_once(tmp: Path) -> None:
    """OpenLLMetry's span and the anthropic SDK's own span of each call: one turn per call."""
    verdict, server = _run("openllmetry_anthropic+sdk", "healthy", False, tmp)
    assert verdict.turns == server.agent_calls


def test_the_sdk_conversation_id_groups_and_is_named(tmp: Path) -> None:
    """The anthropic SDK's ``conversation_id`` option is the conversation key, named on findings."""
    verdict, _ = _run("anthropic_sdk", "stuck", False, tmp)
    assert verdict.conversations == {"conv-7"}
    assert all("grouped by gen_ai.conversation.id" in f.reason for f in verdict.findings)


def test_openinference_session_id_groups_and_is_named(tmp: Path) -> None:
    """OpenInference's ``session.id`` (``using_session``) is the conversation key."""
    verdict, _ = _run("openinference", "stuck", False, tmp)
    assert verdict.conversations == {"sess-1"}
    assert all("grouped by session.id" in f.reason for f in verdict.findings)
