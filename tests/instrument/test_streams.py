"""Streams stay streams: same events, and the span ends exactly once however the stream ends."""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import (
    MODEL,
    PROXY_ISINSTANCE,
    anthropic_client,
    async_anthropic_client,
    attrs,
    chat_spans,
    tool_use_block,
)

if TYPE_CHECKING:
    from anthropic.types import MessageParam

TASK: list[MessageParam] = [{"role": "user", "content": "Fix the failing test."}]
TOOL_REPLY = Reply("Let me look.", tool_calls=(ToolCall("grep", {"pattern": "fixture"}),))


def _events(api: FakeLLMAPI) -> list[tuple[str, str | None]]:
    """The event types (and delta types) an uninstrumented client yields for one reply."""
    client = anthropic_client(api)
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    return [(e.type, getattr(getattr(e, "delta", None), "type", None)) for e in stream]


def test_stream_yields_the_same_events_and_ends_once_with_usage(
    cap: Capture, instrument: Any
) -> None:
    """Read to the end, the instrumented stream gives the same events; one span with usage."""
    expected = _events(FakeLLMAPI([TOOL_REPLY]))
    instrument()
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    assert not PROXY_ISINSTANCE or isinstance(stream, anthropic.Stream)
    got = [(e.type, getattr(getattr(e, "delta", None), "type", None)) for e in stream]
    assert got == expected
    (span,) = chat_spans(cap)
    a = attrs(span)
    assert a[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert a[sc.GEN_AI_USAGE_OUTPUT_TOKENS] > 0
    assert a[sc.TOOL_CALLS] == ("grep",)
    assert a[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    stream.close()
    assert len(cap.spans) == 1


def test_break_leaves_the_span_open_until_close(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A `break` does not end the span (reading may go on); `close()` then ends it once."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    for event in stream:
        if event.type == "content_block_start":
            break
    assert cap.spans == ()
    rest = [e.type for e in stream]
    assert rest[-1] == "message_stop"
    stream.close()
    stream.close()
    (span,) = chat_spans(cap)
    assert attrs(span)[sc.TOOL_CALLS] == ("grep",)


def test_close_after_break_ends_the_span_with_what_was_read(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Closed early, the span ends at close() with the usage read so far."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    for _ in stream:
        break
    stream.close()
    (span,) = chat_spans(cap)
    a = attrs(span)
    assert a[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert a[sc.TURN_INDEX] == 1
    assert span.status.is_ok


def test_abandoned_stream_ends_its_span_when_collected(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A stream dropped half-read ends its span when it is garbage collected."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    next(iter(stream))
    assert cap.spans == ()
    del stream
    gc.collect()
    assert len(chat_spans(cap)) == 1


def test_with_block_ends_the_span_on_exit(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """`with create(stream=True) as s:` yields the instrumented stream and ends at exit."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    with client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True) as s:
        first = next(s)
        assert first.type == "message_start"
        assert cap.spans == ()
    assert len(chat_spans(cap)) == 1


def test_error_event_ends_the_span_as_failed_and_reraises(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A mid-stream error is re-raised unchanged, and the span ends with error.type."""
    client = anthropic_client(FakeLLMAPI([Reply("x", stream_error="overloaded_error")]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        list(stream)
    (span,) = chat_spans(cap)
    assert not span.status.is_ok
    assert attrs(span)[sc.ERROR_TYPE] == "APIStatusError"
    assert sc.TURN_INDEX not in attrs(span)


def test_next_is_observed_like_iteration(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Reading with next() to StopIteration ends the span with the tool calls."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True)
    events: list[Any] = []
    while (event := next(stream, None)) is not None:
        events.append(event)
    assert events[-1].type == "message_stop"
    assert attrs(chat_spans(cap)[0])[sc.TOOL_CALLS] == ("grep",)


@pytest.mark.parametrize("reader", ["get_final_message", "until_done", "text_stream", "iterate"])
def test_messages_stream_helper_ends_the_span(
    cap: Capture, instrumented: CompactionInstrumentor, reader: str
) -> None:
    """messages.stream(): every way of reading it ends one span with the response's facts."""
    client = anthropic_client(FakeLLMAPI([TOOL_REPLY]))
    with client.messages.stream(model=MODEL, max_tokens=64, messages=TASK) as stream:
        if reader == "text_stream":
            assert "".join(stream.text_stream) == "Let me look."
        elif reader == "iterate":
            assert any(e.type == "message_stop" for e in stream)
        else:
            getattr(stream, reader)()
        final = stream.get_final_message()
    assert tool_use_block(final.content[1]).name == "grep"
    (span,) = chat_spans(cap)
    a = attrs(span)
    assert a[sc.TOOL_CALLS] == ("grep",)
    assert a[sc.GEN_AI_RESPONSE_ID] == final.id


def test_messages_stream_manager_never_entered_makes_no_call(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The span starts when the manager is entered (the request is made), not at stream()."""
    api = FakeLLMAPI([TOOL_REPLY])
    client = anthropic_client(api)
    manager = client.messages.stream(model=MODEL, max_tokens=64, messages=TASK)
    assert manager.__class__.__name__ == "MessageStreamManager"
    assert api.requests == []
    assert cap.spans == ()


def test_async_stream_and_async_manager(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """Async create(stream=True) and async messages.stream() end one span each."""
    client = async_anthropic_client(FakeLLMAPI([TOOL_REPLY, TOOL_REPLY]))

    async def run() -> list[str]:
        stream = await client.messages.create(
            model=MODEL, max_tokens=64, messages=TASK, stream=True
        )
        assert not PROXY_ISINSTANCE or isinstance(stream, anthropic.AsyncStream)
        kinds: list[str] = [e.type async for e in stream]
        async with client.messages.stream(model=MODEL, max_tokens=64, messages=TASK) as managed:
            await managed.get_final_message()
        return kinds

    kinds = asyncio.run(run())
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    spans = chat_spans(cap)
    assert len(spans) == 2
    assert all(attrs(s)[sc.TOOL_CALLS] == ("grep",) for s in spans)


def test_async_stream_closed_from_another_task(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Closing a half-read async stream in another task ends the span, with no detach error."""
    client = async_anthropic_client(FakeLLMAPI([TOOL_REPLY]))

    async def run() -> None:
        stream = await client.messages.create(
            model=MODEL, max_tokens=64, messages=TASK, stream=True
        )
        async for _ in stream:
            break
        await asyncio.create_task(stream.close())

    asyncio.run(run())
    assert len(chat_spans(cap)) == 1


def test_no_metric_point_per_chunk(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """A streamed call records each histogram once, not once per event."""
    client = anthropic_client(FakeLLMAPI([Reply("a long answer " * 20)]))
    events = list(client.messages.create(model=MODEL, max_tokens=64, messages=TASK, stream=True))
    assert len(events) > 5
    (duration,) = cap.metric_points(sc.METRIC_OPERATION_DURATION.name)
    assert duration.count == 1
    usage = cap.metric_points(sc.METRIC_TOKEN_USAGE.name)
    assert sum(p.count for p in usage) == 2
