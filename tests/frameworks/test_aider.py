"""aider for real (0.86, its own environment and pinned LiteLLM) against a scripted server on
loopback: its chat summarizer, run in the thread aider starts itself, is the compaction's
cost in the agent's conversation, and the summary it uses is one compaction.

aider 0.86.2 throws away the summary its thread makes after an edit (see the driver); it
uses the one it makes when the coder changes edit format (``/chat-mode``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.frameworks._driven import drive_module
from tests.frameworks.test_litellm import chats, compactions, flags

pytestmark = pytest.mark.slow

STEPS = 22
SWITCH = 4
VARIANTS = [
    {"provider": "anthropic", "stream": False},
    {"provider": "openai", "stream": True, "conversation": "aider-run-1"},
]


def _id(variant: dict[str, Any]) -> str:
    return f"{variant['provider']}-{'sse' if variant['stream'] else 'json'}"


def _run(options: str) -> dict[str, Any]:
    return drive_module("aider", "tests.frameworks.drivers.aider_agent", options)


def run(**options: Any) -> dict[str, Any]:
    """The driver's report for these options (each set of options runs once)."""
    return _run(json.dumps({"steps": STEPS, "switch": SWITCH, **options}, sort_keys=True))


def summarizer_spans(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in chats(report) if "compaction.turn.index" not in s["attributes"]]


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_every_call_is_one_inference_span(variant: dict[str, Any]) -> None:
    """Each request aider sent through LiteLLM 1.81 (whose OpenAI path goes through the
    instrumented openai client) is exactly one inference span."""
    report = run(**variant)
    assert report["errors"] == 0
    assert report["summaries"] > 10
    assert len(chats(report)) == report["requests"] == STEPS + SWITCH + report["summaries"]


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_summarizer_calls_are_no_turns_of_the_agent(variant: dict[str, Any]) -> None:
    """ChatSummary's calls, in aider's own thread or not, are spans of the agent's one
    conversation without a turn; the turns count the coder's calls only."""
    report = run(**variant)
    summarizers = summarizer_spans(report)
    turns = [
        s["attributes"]["compaction.turn.index"] for s in chats(report) if s not in summarizers
    ]
    assert len(summarizers) == report["summaries"]
    assert turns == list(range(1, STEPS + SWITCH + 1))
    conversations = {s["attributes"]["compaction.conversation.id"] for s in chats(report)}
    assert len(conversations) == 1
    if "conversation" in variant:
        assert conversations == {
            variant["conversation"]
        }  # the block around the run reached aider's thread
        assert all(s["attributes"]["gen_ai.conversation.id"] == "aider-run-1" for s in summarizers)


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_the_summary_aider_uses_is_one_compaction(variant: dict[str, Any]) -> None:
    """Only the summary aider sends (at the edit-format switch) is a compaction: lossy, at
    the turn of the call that sends it, its cost the summarizer calls since the last turn,
    and no finding; aider's re-rendered files and reminders are no compaction."""
    report = run(**variant)
    found = compactions(report)
    assert len(found) == 1
    attributes = found[0]["attributes"]
    assert attributes["compaction.turn.index"] == STEPS + 1
    assert attributes["compaction.mode"] == "lossy"
    assert attributes["compaction.summarizer.calls"] >= 1
    assert attributes["compaction.tokens.after"] < attributes["compaction.tokens.before"] / 2
    assert flags(found[0]) == set()


def test_aider_gets_the_same_results_with_and_without_the_instrumentation() -> None:
    """Every reply and the final history are the same, instrumented or not."""
    plain = run(provider="anthropic", stream=False, instrument=False)
    assert plain["spans"] == []
    assert run(provider="anthropic", stream=False)["results"] == plain["results"]
