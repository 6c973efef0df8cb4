"""Rediscovery in process: repeated tool calls after a compaction, on a follow-up span."""

from __future__ import annotations

from typing import Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor, conversation, record_compaction
from otel_compaction.instrument._runtime import current
from otel_compaction.signals.tokens import tokens_for_chars
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import MODEL, anthropic_client, attrs

TASK = {"role": "user", "content": "Fix the failing billing test."}
RESULT = "x" * 4000  # each file's content, as the tool returned it


@pytest.fixture
def settings() -> Settings:
    """A short horizon, so a scripted run closes it."""
    return Settings(rediscovery_horizon=3)


def tool(name: str, path: str) -> Reply:
    """A reply asking for one tool call on ``path``."""
    return Reply("", tool_calls=(ToolCall(name, {"path": path}),))


class Agent:
    """A scripted agent over the real anthropic client: it runs each tool call it is asked."""

    def __init__(self, replies: list[Reply]) -> None:
        self.client = anthropic_client(FakeLLMAPI(replies))
        self.messages: list[Any] = [TASK]

    def step(self) -> None:
        """One call; its tool calls' results go into the history."""
        message = self.client.messages.create(model=MODEL, max_tokens=64, messages=self.messages)
        self.messages.append({"role": "assistant", "content": message.content})
        results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": RESULT}
            for block in message.content
            if block.type == "tool_use"
        ]
        self.messages.append({"role": "user", "content": results or "go on"})

    def compact(self) -> str:
        """Replace the history by a summary, and say so."""
        summary = "goal: fix the billing test; next_action: patch the rounding"
        compaction_id = record_compaction(summary=summary, tokens_before=9000, tokens_after=500)
        assert compaction_id is not None  # in a conversation: analysed at once
        self.messages = [TASK, {"role": "user", "content": summary}]
        return compaction_id


def run(cap: Capture, replies_after: list[Reply]) -> tuple[str, list[dict[str, Any]]]:
    """Read a.py and b.py, compact, then follow ``replies_after``; the rediscovery spans."""
    agent = Agent([tool("read_file", "a.py"), tool("read_file", "b.py"), *replies_after])
    with conversation("billing-1"):
        agent.step()
        agent.step()
        compaction_id = agent.compact()
        for _ in replies_after:
            agent.step()
    return compaction_id, [attrs(s) for s in cap.spans_named(sc.SPAN_REDISCOVERY)]


def test_files_read_again_after_a_compaction_are_measured_on_a_follow_up_span(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Both files re-read after the compaction: 2 calls, their results' tokens, on the span."""
    after = [tool("read_file", "a.py"), tool("read_file", "b.py"), Reply("done"), Reply("ok")]
    compaction_id, (span,) = run(cap, after)
    assert span[sc.COMPACTION_ID] == compaction_id
    assert span[sc.CONVERSATION_ID] == "billing-1"
    assert span[sc.REDISCOVERY_CALLS] == 2
    assert span[sc.REDISCOVERY_TURNS] == 2
    assert span[sc.REDISCOVERY_TOKENS] == 2 * tokens_for_chars(len(RESULT))
    assert span[sc.REDISCOVERY_HORIZON_TURNS] == 3
    assert list(span[sc.REDISCOVERY_TOOLS]) == ["read_file"]
    assert "keep the latest outputs of read_file verbatim" in span[sc.REDISCOVERY_ADVICE]
    (compaction,) = cap.spans_named(sc.SPAN_COMPACTION)
    (rediscovery,) = cap.spans_named(sc.SPAN_REDISCOVERY)
    assert rediscovery.parent is not None
    assert rediscovery.parent.span_id == compaction.context.span_id
    assert [link.context.span_id for link in rediscovery.links] == [compaction.context.span_id]
    (point,) = cap.metric_points(sc.METRIC_REDISCOVERY.name)
    assert (point.count, point.sum) == (1, span[sc.REDISCOVERY_TOKENS])


def test_a_run_that_repeats_nothing_measures_zero(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """New files after the compaction: the span says 0 calls and 0 tokens."""
    after = [tool("read_file", "c.py"), tool("read_file", "d.py"), Reply("done"), Reply("ok")]
    _, (span,) = run(cap, after)
    assert (span[sc.REDISCOVERY_CALLS], span[sc.REDISCOVERY_TOKENS]) == (0, 0)
    assert sc.REDISCOVERY_ADVICE not in span


def test_a_reread_after_editing_the_file_is_not_rediscovery(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The agent edits a.py after the compaction, then reads it to check: nothing redone."""
    after = [tool("Edit", "a.py"), tool("read_file", "a.py"), Reply("done"), Reply("ok")]
    _, (span,) = run(cap, after)
    assert span[sc.REDISCOVERY_CALLS] == 0


def test_a_horizon_open_at_exit_is_measured_over_the_calls_that_came(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """An agent that stops one call after its compaction still gets its rediscovery span."""
    compaction_id, spans = run(cap, [tool("read_file", "a.py")])
    assert spans == []
    runtime = current()
    assert runtime is not None
    for closer in runtime.closers:
        closer(runtime)
    (span,) = [attrs(s) for s in cap.spans_named(sc.SPAN_REDISCOVERY)]
    assert span[sc.COMPACTION_ID] == compaction_id
    assert (span[sc.REDISCOVERY_CALLS], span[sc.REDISCOVERY_HORIZON_TURNS]) == (1, 1)
