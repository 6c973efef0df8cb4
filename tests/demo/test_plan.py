"""The scripted side of the demo: plans, the model, summaries, tools, the agent's rewrite."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from otel_compaction.config import Settings
from otel_compaction.demo.agent import ToolAgent
from otel_compaction.demo.backends import SUMMARIZER_SYSTEM, Call, Message, ModelTurn
from otel_compaction.demo.debugging import (
    DEBUG_SUBJECT,
    NOTE_000_PLAN,
    PLAN_B,
    SUMMARY_AT_30,
    SUMMARY_AT_34,
    healthy_summary,
)
from otel_compaction.demo.migration import livelock_summary, reset_summary
from otel_compaction.demo.plan import (
    PLAN_PHASES,
    ScriptedModel,
    Subject,
    prior_summary,
    step,
)
from otel_compaction.demo.workspace import Workspace
from otel_compaction.lineage.schema import schema_coverage
from otel_compaction.signals.phase import PhaseTracker
from otel_compaction.signals.tools import categorize_tool
from otel_compaction.testing.llm_api import RecordedRequest

CATEGORY = {"r": "read", "g": "read", "t": "none", "e": "edit", "v": "test"}


@pytest.mark.parametrize("letter", sorted(PLAN_PHASES))
def test_each_plan_letter_makes_the_tool_call_of_its_category(letter: str) -> None:
    """r/g read, t calls nothing, e edits, v runs the tests: the phase filter's evidence."""
    reply = step(letter, 5, DEBUG_SUBJECT, reasoning_chars=100)
    categories = [
        categorize_tool(c.name, json.dumps(dict(c.arguments))).value for c in reply.tool_calls
    ]
    assert categories == ([] if letter == "t" else [CATEGORY[letter]])


def _phases(plan: str) -> list[Any]:
    tracker = PhaseTracker(Settings())
    names = {"r": ["read_file"], "g": ["grep"], "t": [], "e": ["edit_file"], "v": ["run_tests"]}
    return [tracker.observe_turn(names[c], turn_index=i) for i, c in enumerate(plan, 1)]


@pytest.mark.parametrize(("plan", "first_edit"), [(NOTE_000_PLAN, 29), (PLAN_B, 22)])
def test_the_first_edit_straddles_and_four_turns_later_patch_has_settled(
    plan: str, first_edit: int
) -> None:
    """The first edit makes the phase straddle hypothesize/patch above the veto; then it settles."""
    veto = Settings().transition_veto
    phases = _phases(plan)
    straddle, settled = phases[first_edit - 1], phases[first_edit + 3]
    top_two = sorted(zip(straddle.distribution, Settings().phases, strict=True))[-2:]
    assert {name for _, name in top_two} == {"hypothesize", "patch"}
    assert straddle.transition_likelihood > veto
    assert settled.name == "patch"
    assert settled.transition_likelihood <= veto


def _request(body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest("anthropic", "/v1/messages", {}, body)


def test_scripted_model_follows_its_plan_and_answers_summarizers_apart() -> None:
    """Turns come from the plan in order; a summarizer request gets a summary and is no turn."""
    model = ScriptedModel("re", DEBUG_SUBJECT, summarize=lambda n, text: f"summary {n}: {text}")
    first = model.reply(_request({"messages": [{"role": "user", "content": "task"}]}))
    summary = model.reply(
        _request({"system": SUMMARIZER_SYSTEM, "messages": [{"role": "user", "content": "x"}]})
    )
    second = model.reply(_request({"messages": []}))
    after = model.reply(_request({"messages": []}))
    assert [c.name for c in first.tool_calls] == ["read_file"]
    assert summary.text == "summary 1: x"
    assert [c.name for c in second.tool_calls] == ["edit_file"]
    assert (after.text, after.tool_calls) == ("The task is done.", ())
    assert model.turns == 3


def test_server_compactions_ride_on_the_scripted_turns() -> None:
    """The reply to a turn named in server_compactions carries that summary as a compaction."""
    model = ScriptedModel("rr", DEBUG_SUBJECT, server_compactions={2: "the summary"})
    replies = [model.reply(_request({"messages": []})) for _ in range(2)]
    assert [r.compaction for r in replies] == [None, "the summary"]
    assert [c.name for c in replies[1].tool_calls] == ["read_file"]


def test_a_summary_request_without_a_summarizer_is_an_error_reply() -> None:
    """A model scripted without a summarizer answers a summary request with an HTTP error."""
    model = ScriptedModel("r", DEBUG_SUBJECT)
    reply = model.reply(_request({"messages": [{"role": "system", "content": SUMMARIZER_SYSTEM}]}))
    assert reply.status == 400


@pytest.mark.parametrize(
    "summary",
    [
        SUMMARY_AT_30,
        SUMMARY_AT_34,
        healthy_summary(3),
        livelock_summary(3, "x"),
        reset_summary(3, "x"),
    ],
    ids=["turn30", "turn34", "healthy", "livelock", "reset"],
)
def test_every_demo_summary_covers_the_preserve_schema(summary: str) -> None:
    """No demo summary may draw a summary_schema_coverage finding: all five fields present."""
    coverage, missing = schema_coverage(summary, Settings().schema_fields)
    assert (coverage, missing) == (1.0, ())


def test_livelock_summaries_restate_the_previous_one_and_grow() -> None:
    """Summary of summary: the next one holds the previous one whole, plus more constraints."""
    first = livelock_summary(1, "")
    second = livelock_summary(2, f"user: {first}\n\nassistant: edited")
    inner = prior_summary(first)
    assert inner is not None
    assert inner in second
    assert second.count("## Constraints (re-derived") == 3
    assert len(second) > 2 * len(first)


def test_reset_summaries_start_from_raw_turns_every_time() -> None:
    """The lineage-reset twin's summarizer drops the previous summary: sizes stay flat."""
    first = reset_summary(1, "")
    later = reset_summary(4, f"user: {first}")
    prior = prior_summary(first)
    assert prior is not None
    assert prior not in later
    assert abs(len(later) - len(first)) < 20


def test_tool_outputs_are_deterministic_distinct_and_sized() -> None:
    """Same calls give the same outputs run after run; no two outputs are equal."""
    sizes = {"read_file": 500}
    one, two = Workspace(sizes, label="a"), Workspace(sizes, label="a")
    outputs = [one.run("read_file", {"path": "x.py"}) for _ in range(5)]
    assert outputs == [two.run("read_file", {"path": "x.py"}) for _ in range(5)]
    assert len(set(outputs)) == 5
    assert all(500 <= len(o) <= 540 for o in outputs)


class _Echo:
    """A backend that calls one tool per turn and needs no server."""

    provider = "test"
    model = "test-model"
    tools: list[dict[str, Any]] = []  # noqa: RUF012 - read only, part of the Backend protocol

    def call(self, system: str, messages: Sequence[Message]) -> ModelTurn:
        turn = sum(1 for m in messages if m["role"] == "assistant") + 1
        call: Call = (f"id{turn}", "read_file", {"path": f"f{turn}.py"})
        return ModelTurn({"role": "assistant", "content": f"turn {turn}"}, (call,), 10)

    def tool_results(self, calls: Sequence[Call], outputs: Sequence[str]) -> list[Message]:
        return [{"role": "user", "content": list(outputs)}]

    def summarize(self, prompt: str) -> str:
        return "summary"


def test_rewrite_keeps_the_task_the_summary_and_the_last_turns_verbatim() -> None:
    """Summarize-then-truncate: task, summary, then the last N turns exactly as they were."""
    agent = ToolAgent("a", _Echo(), Workspace({}, label="a"), system="s", task="the task")
    for _ in range(5):
        agent.step()
    tail = agent.messages[-4:]
    agent.rewrite("the summary", keep_turns=2)
    assert agent.messages == [
        {"role": "user", "content": "the task"},
        {"role": "user", "content": "the summary"},
        *tail,
    ]
    assert agent.turns == 5


def test_subject_cycles_through_its_files() -> None:
    """The files read and edited rotate with the turn number."""
    subject = Subject(files=("a", "b"), edits=("c",))
    assert [subject.file(t) for t in range(4)] == ["a", "b", "a", "b"]
    assert subject.edit(7) == "c"
