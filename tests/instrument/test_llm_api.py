"""The scripted fake LLM API answers the real SDKs like the real APIs do."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

import anthropic
import httpx
import httpx2
import openai
import pytest

from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall, estimate_tokens
from tests.instrument.conftest import (
    COMPACT,
    CONTEXT_MANAGEMENT,
    MODEL,
    OPENAI_MODEL,
    RESPONSES,
    anthropic_client,
    openai_client,
    text_block,
    tool_use_block,
)

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from anthropic.types.beta import (
        BetaClearToolUses20250919EditParam,
        BetaContextManagementConfigParam,
        BetaMessageParam,
    )
    from openai.types.chat import ChatCompletionMessageParam

TASK: list[MessageParam] = [{"role": "user", "content": "hello there"}]
CHAT_TASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello there"}]


def test_usage_grows_with_what_was_sent() -> None:
    """Input tokens are the JSON size of system, tools and messages over four."""
    api = FakeLLMAPI()
    client = anthropic_client(api)
    small = client.messages.create(model=MODEL, max_tokens=8, messages=TASK)
    big = client.messages.create(
        model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x" * 4000}]
    )
    assert small.usage.input_tokens == sum(estimate_tokens(m) for m in TASK)
    assert big.usage.input_tokens > 1000


def test_script_is_followed_in_order_then_the_default() -> None:
    """Replies come in order; tool calls carry their name, arguments and id."""
    call = ToolCall("grep", {"pattern": "x"}, id="toolu_1")
    api = FakeLLMAPI([Reply("one", tool_calls=(call,))], default=Reply("later"))
    client = anthropic_client(api)
    first = client.messages.create(model=MODEL, max_tokens=8, messages=TASK)
    second = client.messages.create(model=MODEL, max_tokens=8, messages=TASK)
    assert first.stop_reason == "tool_use"
    called = tool_use_block(first.content[1])
    assert called.name == "grep"
    assert called.input == {"pattern": "x"}
    assert called.id == "toolu_1"
    assert text_block(second.content[0]).text == "later"
    assert [r.api for r in api.requests] == ["anthropic", "anthropic"]


def test_errors_use_each_providers_envelope() -> None:
    """429 and 500 raise the SDKs' own error classes with retry-after honoured as a header."""
    api = FakeLLMAPI([Reply(status=429, retry_after=2), Reply(status=500)])
    with pytest.raises(anthropic.RateLimitError) as limited:
        anthropic_client(api).messages.create(model=MODEL, max_tokens=8, messages=TASK)
    assert limited.value.response.headers["retry-after"] == "2"
    with pytest.raises(openai.InternalServerError):
        openai_client(api).chat.completions.create(model=OPENAI_MODEL, messages=CHAT_TASK)


@CONTEXT_MANAGEMENT
def test_server_compaction_when_the_trigger_is_reached() -> None:
    """compact_20260112 over its trigger: a compaction block, iterations, billed from it on."""
    api = FakeLLMAPI()
    client = anthropic_client(api)
    edits: BetaContextManagementConfigParam = {
        "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50}}]
    }
    history: list[BetaMessageParam] = [{"role": "user", "content": "y" * 400}]
    message = client.beta.messages.create(
        model=MODEL, max_tokens=8, messages=history, context_management=edits
    )
    assert message.content[0].type == "compaction"
    iterations = message.usage.iterations or []
    assert [i.type for i in iterations] == ["compaction", "message"]
    after: list[BetaMessageParam] = [
        *history,
        {"role": "assistant", "content": message.content},
        {"role": "user", "content": "go"},
    ]
    again = client.beta.messages.create(model=MODEL, max_tokens=8, messages=after)
    assert again.usage.input_tokens < estimate_tokens(history)


@CONTEXT_MANAGEMENT
def test_clear_tool_uses_reports_applied_edits() -> None:
    """clear_tool_uses_20250919 over its trigger reports what it cleared."""
    history: list[BetaMessageParam] = [
        {"role": "user", "content": "go"},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{i}", "content": "z" * 300}
                for i in range(4)
            ],
        },
    ]
    edit: BetaClearToolUses20250919EditParam = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 10},
    }
    message = anthropic_client(FakeLLMAPI()).beta.messages.create(
        model=MODEL, max_tokens=8, messages=history, context_management={"edits": [edit]}
    )
    assert message.context_management is not None
    (applied,) = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert applied.cleared_tool_uses == 1
    assert applied.cleared_input_tokens > 50


@COMPACT
def test_openai_compaction_items_and_compact_endpoint() -> None:
    """Responses compaction items (threshold) and responses.compact's output."""
    client = openai_client(FakeLLMAPI())
    response = client.responses.create(
        model=OPENAI_MODEL,
        input="x" * 400,
        context_management=[{"type": "compaction", "compact_threshold": 10}],
    )
    assert response.output[0].type == "compaction"
    compacted = client.responses.compact(
        model=OPENAI_MODEL, input=[{"role": "user", "content": "hi"}]
    )
    from openai.types.responses import ResponseCompactionItem

    assert compacted.object == "response.compaction"
    item = compacted.output[-1]
    assert item.type == "compaction"
    assert isinstance(item, ResponseCompactionItem)
    assert base64.b64decode(item.encrypted_content).startswith(b"Summary")


def test_old_httpx_requests_are_answered_too() -> None:
    """The same handler serves `httpx` (older SDK releases) as well as `httpx2`."""
    api = FakeLLMAPI([Reply("via httpx")])
    with httpx.Client(
        transport=api.mock_transport("httpx"), base_url="https://api.anthropic.com"
    ) as http:
        response = http.post(
            "/v1/messages", json={"model": MODEL, "messages": TASK, "max_tokens": 8}
        )
    assert response.json()["content"][0]["text"] == "via httpx"
    assert isinstance(api.mock_transport(), httpx2.MockTransport)


@RESPONSES
@pytest.mark.slow
def test_local_http_server_serves_both_sdks() -> None:
    """serve(): a real HTTP server on 127.0.0.1, streaming included."""
    api = FakeLLMAPI([Reply("one"), Reply("two"), Reply("three")])
    with api.serve() as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        claude = anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0)
        answer = claude.messages.create(model=MODEL, max_tokens=8, messages=TASK)
        assert text_block(answer.content[0]).text == "one"
        gpt = openai.OpenAI(api_key="k", base_url=base_url + "/v1", max_retries=0)
        chunks = gpt.chat.completions.create(model=OPENAI_MODEL, messages=CHAT_TASK, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "two"
        raw = gpt.responses.create(model=OPENAI_MODEL, input="x")
        assert raw.output_text == "three"
    assert json.loads(json.dumps(api.requests[0].body))["model"] == MODEL
