"""Never break the host: internal faults swallowed, API errors unchanged, secrets kept out."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest
from opentelemetry import trace

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.inference import _rewrites, history
from otel_compaction.instrument import (
    CompactionInstrumentor,
    _begin,
    _call,
    _compactions,
    _scope,
)
from otel_compaction.instrument._anthropic import AnthropicMessages, AnthropicStream
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import (
    MODEL,
    OPENAI_MODEL,
    RESPONSES,
    anthropic_client,
    attrs,
    chat_spans,
    openai_client,
)

if TYPE_CHECKING:
    from anthropic.types import MessageParam

TASK_TEXT = "Find the memory leak."
TASK: MessageParam = {"role": "user", "content": TASK_TEXT}


def _script() -> list[Reply]:
    calls = [ToolCall("read_file", {"path": f"m{i}.py"}, id=f"toolu_{i}") for i in range(6)]
    return [Reply(f"step {i}", tool_calls=(call,)) for i, call in enumerate(calls)]


def _run_agent(api: FakeLLMAPI) -> list[Any]:
    """Three plain calls, a compaction, a streamed call; returns what the caller saw."""
    client = anthropic_client(api)
    seen: list[Any] = []
    messages: list[Any] = [TASK]
    for _ in range(3):
        message = client.messages.create(model=MODEL, max_tokens=64, messages=messages)
        seen.append(message.model_dump(exclude={"id"}))
        messages += [{"role": "assistant", "content": message.content}]
        messages += [{"role": "user", "content": "result " * 40}]
    messages = [TASK, {"role": "user", "content": "summary"}, *messages[-2:]]
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=messages, stream=True)
    seen.append([e.model_dump(exclude={"message"}) for e in stream])
    with client.messages.stream(model=MODEL, max_tokens=64, messages=messages) as managed:
        seen.append(managed.get_final_message().model_dump(exclude={"id"}))
    return seen


def _boom(*_: Any, **__: Any) -> Any:
    raise RuntimeError("injected internal fault")


STAGES: dict[str, tuple[Any, str]] = {
    "request extraction": (AnthropicMessages, "request"),
    "history placement": (history.HistoryTracker, "place"),
    "rewrite inference": (_rewrites, "infer_rewrite"),
    "span start": (_begin, "start_inference_span"),
    "response extraction": (AnthropicMessages, "response"),
    "stream event": (AnthropicStream, "on_event"),
    "stream result": (AnthropicStream, "result"),
    "turn analysis": (ConversationAnalyzer, "observe_turn"),
    "compaction analysis": (ConversationAnalyzer, "observe_compaction"),
    "compaction span": (_compactions, "emit_compaction"),
    "turn attributes": (_call, "turn_attributes"),
    "response attributes": (_call, "response_attributes"),
    "turn metrics": (CompactionMetrics, "record_turn"),
    "context attach": (_scope, "call_context"),
}


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_internal_fault_leaves_the_call_unchanged(
    cap: Capture,
    instrument: Callable[..., CompactionInstrumentor],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    stage: str,
) -> None:
    """With any internal stage raising, the caller sees exactly what the bare client returns,
    and the host's log gets one warning per stage, without a traceback."""
    expected = _run_agent(FakeLLMAPI(_script()))
    instrument()
    owner, name = STAGES[stage]
    monkeypatch.setattr(owner, name, _boom)
    with caplog.at_level(logging.DEBUG, logger="otel_compaction.instrument"):
        got = _run_agent(FakeLLMAPI(_script()))
    assert got == expected
    assert trace.get_current_span() is trace.INVALID_SPAN  # no context left attached
    assert not _scope.in_call()
    ours = [r for r in caplog.records if r.name.startswith("otel_compaction")]
    errors = [r for r in ours if r.levelno >= logging.WARNING]
    assert errors
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in errors)  # no traceback
    assert len({r.getMessage() for r in errors}) == len(errors)  # once per stage
    assert cap.counter_total(sc.METRIC_INSTRUMENTATION_ERRORS.name) >= 1


def _error_of(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(anthropic.APIError) as info:
        call()
    return info.value


@pytest.mark.parametrize("status", [429, 500])
def test_api_errors_are_reraised_unmodified(
    cap: Capture, instrument: Callable[..., CompactionInstrumentor], status: int
) -> None:
    """A 429 or 500 reaches the caller as the same exception; the span records error.type."""
    reply = Reply(status=status, retry_after=1)
    bare = anthropic_client(FakeLLMAPI([reply]))
    expected = _error_of(lambda: bare.messages.create(model=MODEL, max_tokens=8, messages=[TASK]))
    instrument()
    client = anthropic_client(FakeLLMAPI([reply]))
    got = _error_of(lambda: client.messages.create(model=MODEL, max_tokens=8, messages=[TASK]))
    assert type(got) is type(expected)
    assert isinstance(got, anthropic.APIStatusError)
    assert got.status_code == status
    assert str(got) == str(expected)
    (span,) = chat_spans(cap)
    assert not span.status.is_ok
    assert attrs(span)[sc.ERROR_TYPE] == type(expected).__name__
    assert sc.TURN_INDEX not in attrs(span)
    (duration,) = cap.metric_points(sc.METRIC_OPERATION_DURATION.name)
    assert dict(duration.attributes)[sc.ERROR_TYPE] == type(expected).__name__


def test_timeouts_are_reraised_unmodified(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A transport timeout surfaces as the SDK's APITimeoutError, as without us."""
    client = openai_client(FakeLLMAPI([Reply(timeout=True)]))
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": TASK_TEXT}]
        )
    assert attrs(chat_spans(cap)[0])[sc.ERROR_TYPE] == "APITimeoutError"


def _telemetry_text(cap: Capture) -> str:
    """Every span attribute, event and link, and every metric attribute, as one string."""
    parts = []
    for span in cap.spans:
        parts.append(json.dumps(span.to_json()))
    data = cap.metric_reader.get_metrics_data()
    parts.append(data.to_json() if data is not None else "")
    return "\n".join(parts)


@RESPONSES
@pytest.mark.parametrize("settings", [Settings(capture_content=True)])
def test_api_keys_and_auth_headers_never_reach_telemetry(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Even with content capture on, no key, auth header or header name appears anywhere."""
    api = FakeLLMAPI(_script())
    _run_agent(api)
    client = openai_client(FakeLLMAPI())
    client.chat.completions.create(
        model=OPENAI_MODEL, messages=[{"role": "user", "content": TASK_TEXT}]
    )
    client.responses.create(model=OPENAI_MODEL, input="hello")
    sent = api.requests[0].headers
    assert "sk-ant-test-secret" in sent.get("authorization", sent.get("x-api-key", ""))
    text = _telemetry_text(cap).lower()
    for secret in (
        "sk-ant-test-secret",
        "sk-openai-test-secret",
        "x-api-key",
        "authorization",
        "bearer",
    ):
        assert secret not in text


def test_content_is_not_captured_by_default(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Without the GenAI capture variable, no message or summary text is on any span."""
    _run_agent(FakeLLMAPI(_script()))
    for span in cap.spans:
        a = attrs(span)
        assert sc.GEN_AI_INPUT_MESSAGES not in a
        assert sc.GEN_AI_OUTPUT_MESSAGES not in a
        assert sc.SUMMARY_TEXT not in a
    assert "Find the memory leak" not in _telemetry_text(cap)


def test_capture_env_variable_turns_capture_on_with_a_cap(
    cap: Capture, instrument: Callable[..., CompactionInstrumentor], monkeypatch: pytest.MonkeyPatch
) -> None:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY captures, capped and marked."""
    monkeypatch.setenv(sc.ENV_CAPTURE_MESSAGE_CONTENT, "SPAN_ONLY")
    monkeypatch.setenv("OTEL_PYTHON_COMPACTION_CONTENT_MAX_CHARS", "300")
    instrument(settings=None)
    client = anthropic_client(FakeLLMAPI([Reply("answer " * 100)]))
    client.messages.create(
        model=MODEL,
        max_tokens=64,
        system="Be terse.",
        messages=[{"role": "user", "content": "q " * 500}],
    )
    a = attrs(chat_spans(cap)[0])
    inputs = json.loads(a[sc.GEN_AI_INPUT_MESSAGES])
    assert inputs[0]["role"] == "user"
    assert "truncated" in inputs[0]["parts"][0]["content"]
    assert len(a[sc.GEN_AI_INPUT_MESSAGES]) <= 400
    outputs = json.loads(a[sc.GEN_AI_OUTPUT_MESSAGES])
    assert outputs[0]["role"] == "assistant"
    assert outputs[0]["finish_reason"] == "end_turn"
    assert json.loads(a[sc.GEN_AI_SYSTEM_INSTRUCTIONS])[0]["content"] == "Be terse."
    assert a[sc.CONTENT_TRUNCATED] is True
