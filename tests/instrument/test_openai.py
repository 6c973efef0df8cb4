"""The openai client, instrumented: Chat Completions and Responses, sync, async and streaming."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import openai

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import (
    CHAT_STREAM_HELPER,
    OPENAI_MODEL,
    RESPONSES,
    async_openai_client,
    attrs,
    chat_spans,
    openai_client,
)

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionSystemMessageParam

SYSTEM: ChatCompletionSystemMessageParam = {
    "role": "system",
    "content": "You are a careful debugging agent.",
}
TOOL = Reply("", tool_calls=(ToolCall("run_tests", {"path": "tests/"}),))


def _chat_agent(client: openai.OpenAI, task: str, turns: int, **kwargs: Any) -> list[Any]:
    messages: list[Any] = [SYSTEM, {"role": "user", "content": task}]
    for _ in range(turns):
        completion = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, **kwargs)
        message = completion.choices[0].message
        messages.append(message)
        for call in message.tool_calls or ():
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "1 failed " * 30})
    return messages


def test_chat_completion_span_and_turns(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """chat.completions.create: one `chat {model}` span per call, turns of one conversation."""
    client = openai_client(FakeLLMAPI([TOOL, TOOL, Reply("fixed")]))
    _chat_agent(client, "Make the test pass.", 3)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert spans[0][sc.GEN_AI_PROVIDER_NAME] == "openai"
    assert spans[0][sc.TOOL_CALLS] == ("run_tests",)
    assert spans[0][sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert spans[1][sc.CONTEXT_NEW_CONTENT_TOKENS] > 30
    assert spans[2][sc.GEN_AI_USAGE_INPUT_TOKENS] > spans[0][sc.GEN_AI_USAGE_INPUT_TOKENS]


def test_interleaved_agents_with_the_same_system_prompt_stay_apart(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Two agents interleaving calls, same system prompt, different tasks: two conversations."""
    client = openai_client(FakeLLMAPI([TOOL] * 8))
    a: list[Any] = [SYSTEM, {"role": "user", "content": "Task A: fix the parser."}]
    b: list[Any] = [SYSTEM, {"role": "user", "content": "Task B: speed up the cache."}]
    for _ in range(4):
        for history in (a, b):
            message = client.chat.completions.create(model=OPENAI_MODEL, messages=history)
            history.append(message.choices[0].message)
            history.append({"role": "tool", "tool_call_id": "c", "content": "ok"})
    spans = [attrs(s) for s in chat_spans(cap)]
    first, second = spans[0][sc.CONVERSATION_ID], spans[1][sc.CONVERSATION_ID]
    assert first != second
    assert [s[sc.CONVERSATION_ID] for s in spans] == [first, second] * 4
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 1, 2, 2, 3, 3, 4, 4]


def test_chat_stream_ends_once_with_usage(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """stream=True with include_usage: the chunks pass through, the span has the usage."""
    client = openai_client(FakeLLMAPI([TOOL]))
    stream = client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=[SYSTEM, {"role": "user", "content": "go"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    assert isinstance(stream, openai.Stream)
    chunks = list(stream)
    assert chunks[-1].usage is not None
    (span,) = chat_spans(cap)
    a = attrs(span)
    assert a[sc.TOOL_CALLS] == ("run_tests",)
    assert a[sc.GEN_AI_USAGE_INPUT_TOKENS] == chunks[-1].usage.prompt_tokens


@CHAT_STREAM_HELPER
def test_chat_completions_stream_helper(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """chat.completions.stream() goes through create: one span, ended with the stream."""
    client = openai_client(FakeLLMAPI([Reply("all green")]))
    with client.chat.completions.stream(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": "go"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "all green"
    (span,) = chat_spans(cap)
    assert attrs(span)[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)


def test_async_chat_and_stream(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """AsyncCompletions.create, plain and streaming."""
    client = async_openai_client(FakeLLMAPI([TOOL, Reply("done")]))

    async def run() -> None:
        messages: list[Any] = [{"role": "user", "content": "go"}]
        completion = await client.chat.completions.create(model=OPENAI_MODEL, messages=messages)
        messages += [
            completion.choices[0].message,
            {"role": "tool", "tool_call_id": "x", "content": "r"},
        ]
        stream = await client.chat.completions.create(
            model=OPENAI_MODEL, messages=messages, stream=True
        )
        assert [c async for c in stream]

    asyncio.run(run())
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2]


@RESPONSES
def test_responses_create_and_stream(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """responses.create and responses.stream: one span each, usage and tool calls read."""
    client = openai_client(FakeLLMAPI([TOOL, Reply("ok")]))
    items: list[Any] = [{"role": "user", "content": "Investigate the flaky test."}]
    response = client.responses.create(model=OPENAI_MODEL, input=items, instructions="Be brief.")
    items += list(response.output)
    items.append({"type": "function_call_output", "call_id": "call", "output": "2 failed"})
    with client.responses.stream(model=OPENAI_MODEL, input=items, instructions="Be brief.") as s:
        final = s.get_final_response()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2]
    assert spans[0][sc.TOOL_CALLS] == ("run_tests",)
    assert spans[1][sc.GEN_AI_RESPONSE_ID] == final.id
    assert spans[1][sc.GEN_AI_USAGE_INPUT_TOKENS] == final.usage.input_tokens  # type: ignore[union-attr]
    assert spans[0][sc.CONVERSATION_ID] == spans[1][sc.CONVERSATION_ID]


@RESPONSES
def test_previous_response_id_chains_the_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Calls chained by previous_response_id are one conversation, whatever their input."""
    client = openai_client(FakeLLMAPI())
    first = client.responses.create(model=OPENAI_MODEL, input="Start the task.")
    second = client.responses.create(
        model=OPENAI_MODEL, input="next", previous_response_id=first.id
    )
    client.responses.create(model=OPENAI_MODEL, input="next", previous_response_id=second.id)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3]
    assert spans[1][sc.CONVERSATION_ID_SOURCE] == "chained"


@RESPONSES
def test_openai_conversation_parameter_is_a_given_id(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """responses.create(conversation=...) names the conversation (gen_ai.conversation.id)."""
    client = openai_client(FakeLLMAPI())
    client.responses.create(model=OPENAI_MODEL, input="hi", conversation="conv_abc")
    client.responses.create(model=OPENAI_MODEL, input="again", conversation={"id": "conv_abc"})
    spans = [attrs(s) for s in chat_spans(cap)]
    assert {s[sc.GEN_AI_CONVERSATION_ID] for s in spans} == {"conv_abc"}
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2]


@RESPONSES
def test_async_responses(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """AsyncResponses.create, plain and streaming."""
    client = async_openai_client(FakeLLMAPI([TOOL, Reply("done")]))

    async def run() -> None:
        await client.responses.create(model=OPENAI_MODEL, input="go")
        stream = await client.responses.create(model=OPENAI_MODEL, input="go", stream=True)
        kinds = [e.type async for e in stream]
        assert kinds[-1] == "response.completed"

    asyncio.run(run())
    assert len(chat_spans(cap)) == 2
