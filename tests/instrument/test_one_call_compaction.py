"""An agent whose fixed part (system prompt, tools) fills the context past the trigger
compacts one call after the last: each compaction replaces one model turn, and the
first one replaces a response that was never sent back. At pressure both are
compactions of the same conversation; below it, a swapped last turn is a retry."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor, conversation
from otel_compaction.testing import Capture
from tests.instrument.conftest import (
    MODEL,
    attrs,
    chat_spans,
    compaction_attrs,
    reading_client,
)

TASK = "The integration test fails in tests/test_api.py; find out why and fix it."
WINDOW = 2_000
FIXED = "You are a debugging agent. Tools and rules follow.\n" + "rule: be careful. " * 330
"""About three quarters of the window on its own: every request is at pressure."""
SMALL = "You are a debugging agent."


def _summary(n: int) -> str:
    return f"Summary {n} of the work so far. Task: {TASK} Found: handler {n} keeps a socket."


class Agent:
    """Calls the real anthropic client; ``compact`` swaps everything after the task for
    one summary, the model's last turn and its tool result included."""

    def __init__(self, client: anthropic.Anthropic, system: str) -> None:
        self.client, self.system = client, system
        self.messages: list[Any] = [{"role": "user", "content": TASK}]

    def call(self) -> Any:
        return self.client.messages.create(
            model=MODEL, max_tokens=256, system=self.system, messages=self.messages
        )

    def turn(self) -> None:
        message = self.call()
        self.messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        self.messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": "log line " * 20}
                    for u in uses
                ],
            }
        )

    def compact(self, n: int) -> None:
        self.messages = [self.messages[0], {"role": "user", "content": _summary(n)}]


WINDOWED = pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: WINDOW})])


@WINDOWED
def test_a_compaction_every_call_at_pressure_is_found_each_time(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Call 1 sends the task; its response is never sent back: call 2 sends the task and a
    summary (the response replaced), calls 3 and 4 swap the last summary and the model
    turn after it for a new summary. One conversation, three lossy compactions."""
    agent = Agent(reading_client(), FIXED)
    agent.call()  # the response is not kept: the agent compacts at once
    agent.compact(1)
    for n in (2, 3):
        agent.turn()
        agent.compact(n)
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[0][sc.PRESSURE_TOKEN_FRACTION] >= 0.65
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3, 4]
    compactions = compaction_attrs(cap)
    assert [c[sc.TURN_INDEX] for c in compactions] == [2, 3, 4]
    assert {c[sc.COMPACTION_MODE] for c in compactions} == {"lossy"}
    assert {c[sc.COMPACTION_TRIGGER] for c in compactions} == {"history_rewritten"}


@WINDOWED
def test_with_an_id_the_replaced_response_is_a_compaction_too(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    agent = Agent(reading_client(), FIXED)
    with conversation("agent-1"):
        agent.call()
        agent.compact(1)
        agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s[sc.CONVERSATION_ID] for s in spans] == ["agent-1", "agent-1"]
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == 2


@WINDOWED
def test_below_pressure_a_swapped_last_turn_is_a_retry_not_a_compaction(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A small system prompt: the same swaps far from the trigger are no compaction. The
    discarded answer is a plain extension; the swapped turn after the task branches at
    the anchor, which (as before) starts a conversation of its own."""
    agent = Agent(reading_client(), SMALL)
    agent.call()
    agent.compact(1)
    agent.turn()
    agent.compact(2)
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[-1][sc.PRESSURE_TOKEN_FRACTION] < 0.65
    assert spans[1][sc.CONVERSATION_ID] == spans[0][sc.CONVERSATION_ID]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 1]
    assert compaction_attrs(cap) == []
