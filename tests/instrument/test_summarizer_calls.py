"""A summarizer's call is never the agent's turn (``inference.summarizer``), with the real
anthropic and openai SDKs and no framework: the call is the compaction's cost, and the
agent's next request carrying its answer is the compaction, in the agent's conversation."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.instrument.conftest import (
    MODEL,
    OPENAI_MODEL,
    anthropic_client,
    attrs,
    chat_spans,
    compaction_attrs,
    openai_client,
)

SYSTEM = "You are a debugging agent. Use the tools to find the fault."
TASK = "The integration test fails in tests/test_api.py; find out why and fix it."
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
SUMMARY = (
    "Goal: fix the failing integration test.\nDecisions: the fixture leaks port 8003.\n"
    "Next action: add a teardown hook to the fixture."
)


def _script(request: RecordedRequest) -> Reply:
    """Tool calls for the agent; the summary for a request that offers no tools."""
    if not request.body.get("tools"):
        return Reply(SUMMARY)
    return Reply("", tool_calls=(ToolCall("read_file", {"path": "tests/test_api.py"}),))


def _output(n: int) -> str:
    return f"file {n}: the fixture opens port {8000 + n} and never closes it " + "log " * 80


class AnthropicAgent:
    """A scripted tool-using agent over the real anthropic client."""

    def __init__(self, client: anthropic.Anthropic, task: str = TASK) -> None:
        self.client = client
        self.messages: list[Any] = [{"role": "user", "content": task}]

    def turn(self) -> None:
        reply = self.client.messages.create(
            model=MODEL, max_tokens=256, system=SYSTEM, messages=self.messages, tools=TOOLS
        )
        self.messages.append({"role": "assistant", "content": reply.content})
        uses = [b for b in reply.content if b.type == "tool_use"]
        n = len(self.messages)
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": _output(n)} for u in uses
        ]
        self.messages.append({"role": "user", "content": results or "continue"})

    def summarize(self) -> str:
        """The agent's own summarizer: its old messages, another system prompt, no tools."""
        reply = self.client.messages.create(
            model=MODEL,
            max_tokens=512,
            system="You write summaries of agent transcripts.",
            messages=[
                *self.messages[:-1],
                {"role": "user", "content": "Summarize the conversation above."},
            ],
        )
        block = reply.content[0]
        assert isinstance(block, anthropic.types.TextBlock)
        return block.text

    def compact(self, summary: str) -> None:
        """Keep the task and the last exchange; the summary in place of the rest."""
        self.messages = [
            self.messages[0],
            {"role": "assistant", "content": "Summary so far:\n" + summary},
            *self.messages[-2:],
        ]


def test_an_anthropic_summarizer_call_is_the_compactions_cost_not_a_turn(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Another system prompt, the agent's messages, a summarize instruction, no tools: no
    turn; the next request carrying its answer is the compaction, at the agent's turn."""
    agent = AnthropicAgent(anthropic_client(FakeLLMAPI(_script)))
    for _ in range(5):
        agent.turn()
    agent.compact(agent.summarize())
    agent.turn()
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert len(spans) == 8
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, 4, 5, None, 6, 7]
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.CONVERSATION_ID] == spans[0][sc.CONVERSATION_ID]
    assert compaction[sc.TURN_INDEX] == 6
    assert compaction[sc.COMPACTION_TRIGGER] == "summarizer_call"
    assert compaction[sc.SUMMARIZER_CALLS] == 1
    assert compaction[sc.TOKENS_BEFORE] > compaction[sc.TOKENS_AFTER]


def test_an_openai_summarizer_of_a_pasted_transcript_is_found_by_its_text(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A summarizer sent the agent's latest tool output as text in one prompt (no message of
    the history) still draws on the agent's conversation."""
    client: openai.OpenAI = openai_client(FakeLLMAPI(_script))
    tools: list[Any] = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for n in range(4):
        reply = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=tools)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        call = (message.tool_calls or [])[0]
        messages.append({"role": "tool", "tool_call_id": call.id, "content": _output(n)})
    transcript = "\n".join(str(m.get("content") or "") for m in messages[1:])
    summary = client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=[{"role": "user", "content": "Summarize this transcript:\n" + transcript}],
    )
    text = summary.choices[0].message.content or ""
    compacted = [messages[0], {"role": "user", "content": TASK + "\n\nProgress:\n" + text}]
    client.chat.completions.create(model=OPENAI_MODEL, messages=compacted, tools=tools)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, 4, None, 5]
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.TURN_INDEX] == 5
    assert compaction[sc.COMPACTION_TRIGGER] == "summarizer_call"


def test_a_fresh_task_that_asks_for_a_summary_is_a_conversation_of_its_own(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The false-positive guard: an instruction alone is not a summarizer's call; a request
    that draws on no other conversation starts its own, with turns."""
    client = anthropic_client(FakeLLMAPI(_script))
    agent = AnthropicAgent(client)
    for _ in range(3):
        agent.turn()
    document: list[Any] = [
        {"role": "user", "content": "Summarize this release note: version 2.3 adds SSO."}
    ]
    client.messages.create(model=MODEL, max_tokens=256, messages=document)
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[3][sc.CONVERSATION_ID] != spans[0][sc.CONVERSATION_ID]
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, 1, 4]
    assert compaction_attrs(cap) == []


def test_a_request_that_offers_tools_is_the_agents_turn_whatever_it_says(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """An agent step that asks to summarize but offers tools stays a turn of the agent."""
    client = anthropic_client(FakeLLMAPI(_script))
    agent = AnthropicAgent(client)
    for _ in range(3):
        agent.turn()
    agent.messages.append({"role": "assistant", "content": "Noted."})
    agent.messages.append({"role": "user", "content": "Now summarize what you found."})
    agent.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s.get(sc.TURN_INDEX) for s in spans] == [1, 2, 3, 4]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
