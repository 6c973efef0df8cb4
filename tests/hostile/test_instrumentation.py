"""No traceback in the host, ever, and no bad number passed to the SDK.

Real anthropic and openai clients over ``httpx2.MockTransport``, answering with
the exact hostile bodies of the issue.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import openai
import pytest

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from tests.instrument.conftest import ANTHROPIC_KEY, MODEL, OPENAI_KEY, OPENAI_MODEL, attrs

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

MESSAGES: list[MessageParam] = [{"role": "user", "content": "read the config"}]
CHAT_MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "read the config"}]
DEEP = "[" * 2000 + "]" * 2000


def _anthropic(handler: Callable[[httpx2.Request], httpx2.Response]) -> anthropic.Anthropic:
    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=http, max_retries=0)


def _openai(handler: Callable[[httpx2.Request], httpx2.Response]) -> openai.OpenAI:
    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key=OPENAI_KEY, http_client=http, max_retries=0)


def _sse(events: list[dict[str, Any]]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def _deep_tool_stream(_: httpx2.Request) -> httpx2.Response:
    """A stream whose tool input (``input_json_delta``) nests 2,000 levels deep."""
    usage = {"input_tokens": 1200, "output_tokens": 1}
    message: dict[str, Any]
    message = {"id": "msg_deep", "type": "message", "role": "assistant", "model": MODEL,
               "content": [], "stop_reason": None, "usage": usage}  # fmt: skip
    tool = {"type": "tool_use", "id": "toolu_deep", "name": "read_config", "input": {}}
    pieces = [DEEP[i : i + 500] for i in range(0, len(DEEP), 500)]
    return _sse([
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": tool},
        *({"type": "content_block_delta", "index": 0,
           "delta": {"type": "input_json_delta", "partial_json": p}} for p in pieces),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 40}},
        {"type": "message_stop"},
    ])  # fmt: skip


def _problems(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Log records a host would see by default as trouble: errors, or anything with a traceback."""
    return [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_2000_deep_streamed_tool_input_leaves_no_traceback_and_keeps_the_span(
    cap: Capture,
    instrument: Callable[..., CompactionInstrumentor],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stream reaches the caller whole; the span keeps its usage and its tool call."""
    bare = [e.model_dump() for e in _anthropic(_deep_tool_stream).messages.create(
        model=MODEL, max_tokens=64, messages=MESSAGES, stream=True)]  # fmt: skip
    instrument()
    with caplog.at_level(logging.WARNING):
        stream = _anthropic(_deep_tool_stream).messages.create(
            model=MODEL, max_tokens=64, messages=MESSAGES, stream=True
        )
        got = [e.model_dump() for e in stream]
    assert got == bare
    assert _problems(caplog) == []
    [span] = [s for s in cap.spans if s.name.startswith("chat")]
    values = attrs(span)
    assert values[sc.GEN_AI_USAGE_INPUT_TOKENS] == 1200
    assert values[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 40
    assert list(values[sc.TOOL_CALLS]) == ["read_config"]


def _not_json(content_type: str) -> Callable[[httpx2.Request], httpx2.Response]:
    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, content=b"all good")

    return handler


def _outcome(call: Callable[[], Any]) -> Any:
    """What a call gives: its value, or its exception's class and message."""
    try:
        return call()
    except Exception as exc:
        return (type(exc), str(exc))


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_raw_response_whose_body_is_not_json_leaves_no_traceback(
    cap: Capture,
    instrument: Callable[..., CompactionInstrumentor],
    caplog: pytest.LogCaptureFixture,
    content_type: str,
) -> None:
    """with_raw_response and a 200 body that is no JSON: the caller's parse() is the bare one's,
    nothing is logged as an error, and the span ends with what the request said."""
    bare_raw = _anthropic(_not_json(content_type)).messages.with_raw_response.create(
        model=MODEL, max_tokens=64, messages=MESSAGES
    )
    bare = _outcome(bare_raw.parse)
    instrument()
    with caplog.at_level(logging.WARNING):
        raw = _anthropic(_not_json(content_type)).messages.with_raw_response.create(
            model=MODEL, max_tokens=64, messages=MESSAGES
        )
        got = _outcome(raw.parse)
    assert got == bare
    assert _problems(caplog) == []
    [span] = [s for s in cap.spans if s.name.startswith("chat")]
    assert attrs(span)[sc.GEN_AI_REQUEST_MODEL] == MODEL


def test_an_internal_failure_is_one_warning_without_a_traceback_then_debug(
    cap: Capture,
    instrument: Callable[..., CompactionInstrumentor],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stage that raises logs one WARNING naming the stage and the error class, counted."""
    from otel_compaction.instrument._anthropic import AnthropicMessages

    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected")

    def ok(_: httpx2.Request) -> httpx2.Response:
        body = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
                "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2}}  # fmt: skip
        return httpx2.Response(200, json=body)

    instrument()
    monkeypatch.setattr(AnthropicMessages, "response", boom)
    client = _anthropic(ok)
    with caplog.at_level(logging.DEBUG, logger="otel_compaction"):
        for _ in range(3):
            client.messages.create(model=MODEL, max_tokens=8, messages=MESSAGES)
    ours = [r for r in caplog.records if r.name.startswith("otel_compaction")]
    warnings = [r for r in ours if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].exc_info is None
    assert "'response'" in warnings[0].getMessage()
    assert "RuntimeError" in warnings[0].getMessage()
    assert [r for r in ours if r.levelno > logging.WARNING] == []
    assert cap.counter_total(sc.METRIC_INSTRUMENTATION_ERRORS.name) == 3


def _negative_anthropic(_: httpx2.Request) -> httpx2.Response:
    body = {"id": "msg_neg", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": -500, "output_tokens": -7}}  # fmt: skip
    return httpx2.Response(200, json=body)


def _negative_openai(_: httpx2.Request) -> httpx2.Response:
    body = {"id": "chatcmpl-neg", "object": "chat.completion", "created": 1, "model": OPENAI_MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": -500, "completion_tokens": -7,
                      "total_tokens": -507}}  # fmt: skip
    return httpx2.Response(200, json=body)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_negative_usage_from_a_server_never_reaches_the_sdk_histogram(
    cap: Capture,
    instrument: Callable[..., CompactionInstrumentor],
    caplog: pytest.LogCaptureFixture,
    provider: str,
) -> None:
    """Usage of -500 tokens is no count: no "must be non-negative" warning, no negative value."""
    instrument()
    with caplog.at_level(logging.WARNING):
        if provider == "anthropic":
            _anthropic(_negative_anthropic).messages.create(
                model=MODEL, max_tokens=8, messages=MESSAGES
            )
        else:
            _openai(_negative_openai).chat.completions.create(
                model=OPENAI_MODEL, messages=CHAT_MESSAGES
            )
    assert [r.getMessage() for r in caplog.records if "non-negative" in r.getMessage()] == []
    [span] = [s for s in cap.spans if s.name.startswith("chat")]
    values = attrs(span)
    assert values.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0) >= 0
    assert values.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS, 0) >= 0
