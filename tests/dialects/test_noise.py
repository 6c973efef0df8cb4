"""What must not read as a compaction in other instrumentations' spans, and loose calls.

Real instrumentations, driven as in ``test_instrumentations``: prompt caching, a new
task in the same trace, two agents interleaved in one trace, tool-output pruning,
and calls with no application root span (every call its own trace).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dialects.runs import TRIGGER, judge, run_agent


@pytest.mark.parametrize(
    ("instrumentation", "venv", "api"),
    [
        ("genai_official", "genai_official", "openai"),  # cache reads inside prompt_tokens
        ("openllmetry_anthropic", "openllmetry", "anthropic"),  # reported apart by the API
        ("anthropic_sdk", "openllmetry", "anthropic"),
    ],
)
def test_prompt_caching_is_no_compaction(
    instrumentation: str, venv: str, api: str, tmp_path: Path
) -> None:
    """Most of each input read from the prompt cache: only the real compactions are found."""
    data, server = run_agent(instrumentation, venv, tmp_path, api=api, steps=34, cache_share=0.8)
    verdict = judge(data)
    assert [turn for _, turn, _ in verdict.compactions] == [n + 1 for n in server.compacted_at]
    assert verdict.turns == server.agent_calls
    assert verdict.findings == []


@pytest.mark.parametrize(
    ("capture", "steps"),
    # Without content a new task is told from a compaction only when the first task
    # ended below pressure (docs/processor.md); with content, at pressure too.
    [(False, 10), (True, 14)],
    ids=["no-content-below-pressure", "content-at-pressure"],
)
def test_a_new_task_in_the_same_trace_is_no_compaction(
    capture: bool, steps: int, tmp_path: Path
) -> None:
    """A second task after the first, in one trace: no compaction between them."""
    data, server = run_agent(
        "genai_official",
        "genai_official",
        tmp_path,
        variant="new_task",
        capture=capture,
        steps=steps,
    )
    assert server.summaries == []
    verdict = judge(data)
    assert verdict.compactions == []
    assert verdict.turns == 2 * steps


@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
def test_two_agents_interleaved_in_one_trace_stay_two(capture: bool, tmp_path: Path) -> None:
    """Two agents alternating calls, each under its own span: two conversations, no false fall."""
    data, server = run_agent(
        "openllmetry_openai",
        "openllmetry",
        tmp_path,
        variant="two_agents",
        capture=capture,
        steps=34,
    )
    verdict = judge(data)
    assert len(verdict.conversations) == 2
    assert len(verdict.compactions) == len(server.summaries) == 4
    assert verdict.findings == []


@pytest.mark.parametrize(
    ("capture", "share"),
    # Without content, a pruning that clears less than half of the context is no fall
    # (one that clears more reads as a compaction: docs/processor.md); with content the
    # message list shows nothing was dropped, whatever the share.
    [(False, 1 / 3), (True, 0.75)],
    ids=["no-content-third", "content-three-quarters"],
)
def test_tool_output_pruning_is_no_compaction(capture: bool, share: float, tmp_path: Path) -> None:
    """Old tool outputs cleared in place at the trigger: no compaction, no finding."""
    data, server = run_agent(
        "openllmetry_openai",
        "openllmetry",
        tmp_path,
        variant="prune",
        capture=capture,
        steps=30,
        extra={"prune_share": share},
    )
    verdict = judge(data)
    assert server.summaries == []
    assert verdict.compactions == []
    assert verdict.turns == server.agent_calls


def test_calls_without_a_root_span_are_grouped_by_service_and_model(tmp_path: Path) -> None:
    """No application span (every call its own trace): one conversation, keyed and named."""
    data, server = run_agent(
        "genai_official", "genai_official", tmp_path, variant="stuck", steps=12, root_span=False
    )
    verdict = judge(data)
    assert len(verdict.conversations) == 1
    assert verdict.turns == server.agent_calls
    assert len(verdict.compactions) == len(server.summaries) - 1
    assert verdict.findings
    assert all("grouped by service_model_gap" in f.reason for f in verdict.findings)


def test_the_trigger_is_above_pressure() -> None:
    """The scripted agent compacts above the processor's pressure threshold (0.65)."""
    assert TRIGGER / 20_000 > 0.65
