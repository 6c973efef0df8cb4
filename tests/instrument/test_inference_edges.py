"""Inference edges seen in held-out runs, with the real anthropic SDK:
a replacement that reclaims nothing far below pressure is no compaction, and a short text
that says it is a summary, in place of the whole history, is one without any carry-over."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from tests.instrument.conftest import MODEL, attrs, chat_spans, compaction_attrs, reading_client

SYSTEM = "You are a debugging agent."
TASK = "The integration test fails in tests/test_api.py; find out why and fix it."
PARAPHRASE = (
    "We traced the failing test to a fixture that leaves sockets open between cases; the "
    "request handler never releases them. A teardown hook is the likely fix."
)


class Agent:
    """A scripted tool-using agent over the real anthropic client."""

    def __init__(self, client: anthropic.Anthropic, task: str = TASK) -> None:
        self.client = client
        self.messages: list[Any] = [{"role": "user", "content": task}]

    def turn(self) -> None:
        reply = self.client.messages.create(
            model=MODEL, max_tokens=256, system=SYSTEM, messages=self.messages
        )
        self.messages.append({"role": "assistant", "content": reply.content})
        n = len(self.messages)
        output = f"file {n}: handler {n} keeps port {8000 + n} open " + "log line " * 40
        uses = [b for b in reply.content if b.type == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": output} for u in uses]
        self.messages.append({"role": "user", "content": results or "continue"})


def test_two_agents_with_one_task_statement_interleaved_are_two_conversations(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Tasks differing in a tag, calls interleaved in one thread, far below pressure: the
    second agent's first request reclaims nothing of the first's history, so it is a
    conversation of its own, not a ``history_replaced`` compaction at turn 2."""
    client = reading_client()
    first, second = Agent(client, "[agent-a] " + TASK), Agent(client, "[agent-b] " + TASK)
    for _ in range(3):
        first.turn()
        second.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 2
    assert spans[1][sc.CONVERSATION_ID] != spans[0][sc.CONVERSATION_ID]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 1, 2, 2, 3, 3]
    assert compaction_attrs(cap) == []


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 2_700})])
def test_a_short_text_that_says_it_is_a_summary_replacing_the_history_is_a_compaction(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """At about 30% of the window, no conversation id: a paraphrase that shares no words
    with the history but says what it is (a summary marker) and is much shorter than what
    it replaces is the conversation's compaction."""
    agent = Agent(reading_client())
    for _ in range(6):
        agent.turn()
    agent.messages = [
        {"role": "user", "content": f"Summary of the work so far: {PARAPHRASE} Continue from here."}
    ]
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert 0.2 <= spans[5][sc.PRESSURE_TOKEN_FRACTION] <= 0.4
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == 7
    assert compaction[sc.COMPACTION_TRIGGER] == "history_replaced"
    assert compaction[sc.TOKENS_BEFORE] > 2 * compaction[sc.TOKENS_AFTER]


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 2_700})])
def test_the_same_paraphrase_without_a_marker_is_a_new_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The false-positive guard: without the marker (and far below pressure), a text that
    carries nothing of the history is another task, not a summary."""
    agent = Agent(reading_client())
    for _ in range(6):
        agent.turn()
    agent.messages = [{"role": "user", "content": PARAPHRASE}]
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[6][sc.CONVERSATION_ID] != spans[0][sc.CONVERSATION_ID]
    assert compaction_attrs(cap) == []


def test_a_second_agent_with_the_same_task_statement_later_is_a_conversation_of_its_own(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The same tasks, the second started after the first ran five turns: its request is
    shorter than the history it would replace, but no longer than the task it restates,
    so it is another agent's task, not a summary, far below pressure."""
    client = reading_client()
    first = Agent(client, "[agent-a] " + TASK)
    for _ in range(5):
        first.turn()
    second = Agent(client, "[agent-b] " + TASK)
    second.turn()
    first.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[5][sc.CONVERSATION_ID] != spans[0][sc.CONVERSATION_ID]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3, 4, 5, 1, 6]
    assert compaction_attrs(cap) == []
