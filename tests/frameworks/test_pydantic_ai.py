"""pydantic-ai, driven for real in its own environment: an agent whose documented
summarizing history processor (``capabilities=[ProcessHistory(fn)]``, a second
``Agent`` with its own instructions) keeps the first request, the summary and a
verbatim tail, against the scripted OpenAI-compatible server on loopback.

One conversation per agent, every call one inference span, every compaction one
``compaction`` span at the call that follows it, the summarizer's calls no turns,
no finding, and the host's results unchanged; with the documented summarizer's
instructions (the generic rule sees it) and with instructions that never say
"summarize" (only the ``ProcessHistory`` hook tells them).
"""

from __future__ import annotations

from typing import Any

import pytest

from otel_compaction import semconv as sc
from tests.frameworks._driven import (
    compaction_spans,
    drive,
    host_view,
    inference_spans,
    turns_after_summaries,
)

DRIVER = "pydantic_ai_agent.py"
WINDOWS = "gpt-4o=7000"
"""The window the processor compacts against (at about 70% of it)."""


@pytest.fixture(scope="module", params=["documented", "notes"])
def runs(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run instrumented and one not, with the summarizer instructions of the parameter."""
    on = drive("pydantic_ai", DRIVER, "on", request.param, windows=WINDOWS)
    off = drive("pydantic_ai", DRIVER, "off", request.param, windows=WINDOWS)
    return on, off


def test_the_host_gets_the_same_results_with_and_without_the_instrumentation(
    runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Same answer, same history length, the same requests byte for byte."""
    on, off = runs
    assert host_view(on) == host_view(off)
    assert sum(r["summarizer"] for r in on["requests"]) >= 4


def test_every_call_is_one_inference_span_in_one_conversation(
    runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """As many inference spans as requests, all in the agent's one conversation."""
    on, _ = runs
    spans = inference_spans(on)
    assert len(spans) == len(on["requests"])
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1


def test_summarizer_calls_are_no_turns(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The summarizer's calls carry the conversation but no turn; the agent's turns run 1..N."""
    on, _ = runs
    spans = inference_spans(on)
    turns = [s[sc.TURN_INDEX] for s in spans if sc.TURN_INDEX in s]
    assert len(spans) - len(turns) == sum(r["summarizer"] for r in on["requests"])
    assert turns == list(range(1, len(turns) + 1))


def test_every_compaction_is_one_span_at_the_call_that_follows_it(
    runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """One ``compaction`` span per summary, in the conversation, at the next agent call's
    turn, its summarizer's cost on it."""
    on, _ = runs
    spans = inference_spans(on)
    compactions = compaction_spans(on)
    assert len(compactions) == sum(r["summarizer"] for r in on["requests"])
    assert [c[sc.TURN_INDEX] for c in compactions] == turns_after_summaries(spans)
    assert {c[sc.CONVERSATION_ID] for c in compactions} == {spans[0][sc.CONVERSATION_ID]}
    assert all(c[sc.COMPACTION_TRIGGER] == "summarizer_call" for c in compactions)
    assert all(c[sc.SUMMARIZER_CALLS] == 1 for c in compactions)


def test_no_finding_is_raised(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Compactions at about 70% of the window with a summary that names the goal, plan,
    decisions, errors and next action: nothing to flag."""
    on, _ = runs
    assert on["findings"] == []
