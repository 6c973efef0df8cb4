"""The LiteLLM layer in process: call details in, one span per call out, never an error out.

LiteLLM itself is driven for real in ``tests/frameworks/test_litellm.py`` (its own
environment); here the observer is fed LiteLLM's call details (the ``kwargs`` dict every
callback gets, in the shape that file's LiteLLM hands over) and responses in the Chat
Completions and Responses shapes LiteLLM returns, built with the openai SDK's own types.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import _scope, _wrappers
from otel_compaction.instrument._framework import FrameworkCall, enter_call, exit_call
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.litellm import _hint, _read
from otel_compaction.instrument.litellm._hint import RequestHint
from otel_compaction.instrument.litellm._observer import LiteLLMObserver
from otel_compaction.instrument.litellm._read import Ephemeral, LiteLLMApi
from otel_compaction.testing import Capture, capture_telemetry

SYSTEM = {"role": "system", "content": "You fix bugs."}
TASK = {"role": "user", "content": "Fix test_parse."}


@pytest.fixture
def cap() -> Iterator[Capture]:
    """Fresh in-memory telemetry."""
    with capture_telemetry() as capture:
        yield capture


@pytest.fixture
def observer(cap: Capture) -> LiteLLMObserver:
    """An observer on a runtime of its own."""
    runtime = Runtime(
        Settings(), tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider
    )
    return LiteLLMObserver(runtime)


def details(call_id: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    """LiteLLM's call details for a ``completion`` to ``anthropic/claude-sonnet-4-5``."""
    out: dict[str, Any] = {
        "litellm_call_id": call_id,
        "call_type": "completion",
        "model": "claude-sonnet-4-5",
        "custom_llm_provider": "anthropic",
        "messages": messages,
        "stream": False,
        "optional_params": {"max_tokens": 512, "temperature": 0.2},
        "litellm_params": {"api_base": "http://127.0.0.1:4010", "metadata": None},
    }
    out.update(extra)
    return out


def completion(text: str, prompt_tokens: int, **usage: Any) -> ChatCompletion:
    """A completion as LiteLLM returns it (Chat Completions shape, LiteLLM's usage names)."""
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "claude-sonnet-4-5",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 7,
                "total_tokens": prompt_tokens + 7,
                **usage,
            },
        }
    )


def run_call(
    observer: LiteLLMObserver, call_id: str, messages: list[Any], reply: Any, **extra: Any
) -> None:
    """One call as LiteLLM reports it: pre-call, post-call, success."""
    info = details(call_id, messages, **extra)
    observer.pre_call(info)
    observer.post_call(info)
    observer.success(info, reply, ordered=True)


def chats(cap: Capture) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in cap.spans if s.name.startswith("chat")]


def test_a_call_is_one_span_with_litellm_usage_and_cache_tokens(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """Pre-call to success is one CLIENT span with the request's and LiteLLM's usage figures."""
    reply = completion("ok", 120, cache_read_input_tokens=40, cache_creation_input_tokens=30)
    run_call(observer, "c1", [SYSTEM, TASK], reply)
    (span,) = chats(cap)
    assert span[sc.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert span[sc.GEN_AI_REQUEST_MODEL] == "claude-sonnet-4-5"
    assert span[sc.GEN_AI_REQUEST_MAX_TOKENS] == 512
    assert span[sc.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert (span[sc.SERVER_ADDRESS], span[sc.SERVER_PORT]) == ("127.0.0.1", 4010)
    assert span[sc.GEN_AI_USAGE_INPUT_TOKENS] == 120
    assert span[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 40
    assert span[sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] == 30
    assert span[sc.TURN_INDEX] == 1
    assert len(observer) == 0


def test_calls_of_one_history_are_turns_of_one_conversation(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """A history that grows call by call is one conversation, one turn per call."""
    history = [SYSTEM, TASK]
    for n in range(3):
        run_call(observer, f"c{n}", list(history), completion(f"step {n}", 100 + 50 * n))
        history += [
            {"role": "assistant", "content": f"step {n}"},
            {"role": "user", "content": "go"},
        ]
    spans = chats(cap)
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1


def test_a_condenser_call_is_no_turn_and_its_cost_goes_to_the_compaction(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """A call whose metadata names OpenHands' condenser is a span of the conversation last
    seen here without a turn; the rewritten history after it is a compaction that carries
    that call as its summarizer cost."""
    old = [{"role": "user", "content": f"old step {n} " + "x" * 400} for n in range(6)]
    history = [SYSTEM, TASK, *old]
    run_call(observer, "a1", history, completion("next", 900))
    metadata = {"metadata": {"tags": ["app:openhands-cli", "type:condenser"]}}
    condense = [{"role": "user", "content": "Summarize the events below: ..."}]
    run_call(
        observer,
        "s1",
        condense,
        completion("SUMMARY of old steps", 300),
        optional_params={"extra_body": metadata},
    )
    summary = {"role": "user", "content": "Summary: SUMMARY of old steps"}
    run_call(observer, "a2", [SYSTEM, TASK, summary, old[-1]], completion("on", 200))
    agent1, condenser, agent2 = chats(cap)
    assert sc.TURN_INDEX not in condenser
    assert condenser[sc.CONVERSATION_ID] == agent1[sc.CONVERSATION_ID] == agent2[sc.CONVERSATION_ID]
    (compaction,) = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert compaction[sc.TURN_INDEX] == agent2[sc.TURN_INDEX] == 2
    assert compaction[sc.SUMMARIZER_CALLS] == 1
    assert compaction[sc.SUMMARIZER_INPUT_TOKENS] == 300


def test_the_sdk_layer_below_stands_by_between_pre_and_post_call(
    observer: LiteLLMObserver,
) -> None:
    """From pre-call to post-call an instrumented client below records nothing (one span per
    call); after it, it records again."""
    info = details("c1", [SYSTEM, TASK])
    assert not _wrappers.skip()
    observer.pre_call(info)
    assert _wrappers.skip()
    observer.post_call(info)
    assert not _wrappers.skip()
    observer.success(info, completion("ok", 10), ordered=False)


def test_a_run_around_the_call_gives_its_conversation_and_is_told_the_turn_is_recorded(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """Inside a framework run (LangChain's), the call takes its conversation, and the run
    learns that this layer records the turn."""
    run = FrameworkCall("thread-7", id_given=True)
    token = enter_call(run)
    try:
        run_call(observer, "c1", [SYSTEM, TASK], completion("ok", 10))
    finally:
        exit_call(run, token)
    (span,) = chats(cap)
    assert span[sc.GEN_AI_CONVERSATION_ID] == "thread-7"
    assert run.observed_by_sdk


def test_a_failed_call_ends_its_span_with_the_error_type(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """A failure (LiteLLM's exception in the details, or none) ends the span as failed, no turn."""
    info = details("c1", [SYSTEM, TASK])
    observer.pre_call(info)
    observer.failure({**info, "exception": TimeoutError("slow")})
    observer.pre_call(details("c2", [SYSTEM, TASK]))
    observer.failure(details("c2", [SYSTEM, TASK]))
    first, second = cap.spans
    assert first.status.status_code.name == "ERROR"
    assert dict(first.attributes or {})[sc.ERROR_TYPE] == "TimeoutError"
    assert dict(second.attributes or {})[sc.ERROR_TYPE] == "LiteLLMCallFailed"
    assert not _wrappers.skip()


def test_a_success_waits_for_the_call_before_it(cap: Capture, observer: LiteLLMObserver) -> None:
    """Two calls of one conversation finished by two pool threads keep their turn order."""
    first = details("c1", [SYSTEM, TASK])
    second = details("c2", [SYSTEM, TASK, {"role": "assistant", "content": "a"}, TASK])
    for info in (first, second):
        observer.pre_call(info)
        observer.post_call(info)

    def finish_first_late() -> None:
        time.sleep(0.05)
        observer.success(first, completion("a", 10), ordered=True)

    late = threading.Thread(target=finish_first_late)
    late.start()
    observer.success(second, completion("b", 20), ordered=True)
    late.join()
    turns = {s[sc.GEN_AI_USAGE_INPUT_TOKENS]: s[sc.TURN_INDEX] for s in chats(cap)}
    assert turns == {10: 1, 20: 2}


def test_calls_whose_end_never_comes_are_ended_as_they_are(
    cap: Capture, observer: LiteLLMObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the in-flight bound the oldest call's span ends; ``close`` ends the rest and
    stops observing."""
    monkeypatch.setattr(observer._calls, "limit", 1)
    observer.pre_call(details("c1", [SYSTEM, TASK]))
    observer.pre_call(details("c2", [SYSTEM, {"role": "user", "content": "other"}]))
    ended = [len(cap.spans)]
    observer.close()
    ended.append(len(cap.spans))
    assert ended == [1, 2]
    observer.pre_call(details("c3", [SYSTEM, TASK]))
    assert len(observer) == 0


def test_nothing_is_recorded_when_instrumentation_is_suppressed_or_the_id_missing(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """Suppressed instrumentation, a retry's second pre-call and a call without LiteLLM's id
    add nothing."""
    with suppress_instrumentation():
        run_call(observer, "c1", [SYSTEM, TASK], completion("ok", 10))
    info = details("c2", [SYSTEM, TASK])
    observer.pre_call(info)
    observer.pre_call(info)
    observer.success(info, completion("ok", 10), ordered=False)
    observer.success(info, completion("ok", 10), ordered=False)
    nameless = details("x", [SYSTEM, TASK])
    del nameless["litellm_call_id"]
    observer.pre_call(nameless)
    observer.post_call(nameless)
    observer.success(nameless, completion("ok", 10), ordered=False)
    assert len(chats(cap)) == 1


def test_our_failures_stay_ours(
    cap: Capture, observer: LiteLLMObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reading of ours that raises leaves the call unrecorded or its span as known, counts
    the error, and raises nothing."""

    def boom(*args: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(LiteLLMApi, "response", boom)
    run_call(observer, "c1", [SYSTEM, TASK], completion("ok", 10))
    monkeypatch.setattr(LiteLLMApi, "request", boom)
    run_call(observer, "c2", [SYSTEM, TASK], completion("ok", 10))
    assert len(chats(cap)) == 1
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in chats(cap)[0]
    assert observer.runtime.guard.errors == 2


def test_a_framework_hint_continues_its_conversation_and_learns_it(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """A hook's hint places the call in the conversation it names, takes its one-request
    messages out of the tracked history, and is told where the call went."""
    placed: list[str] = []
    _hint.note_request(RequestHint(conversation="conv-9", remember=placed.append))
    run_call(observer, "c1", [SYSTEM, TASK], completion("ok", 10))
    reminder = {"role": "system", "content": "Reply in English."}
    _hint.note_request(RequestHint(ephemeral=Ephemeral(rendered=frozenset({reminder["content"]}))))
    run_call(
        observer,
        "c2",
        [SYSTEM, TASK, {"role": "assistant", "content": "ok"}, TASK, reminder],
        completion("ok", 20),
    )
    run_call(
        observer,
        "c3",
        [
            SYSTEM,
            TASK,
            {"role": "assistant", "content": "ok"},
            TASK,
            {"role": "assistant", "content": "ok"},
            TASK,
        ],
        completion("ok", 30),
    )
    assert placed == ["conv-9"]
    assert {s[sc.CONVERSATION_ID] for s in chats(cap)} == {"conv-9"}
    assert cap.spans_named(sc.SPAN_COMPACTION) == []


def test_a_responses_call_is_read_from_its_input_and_instructions(
    cap: Capture, observer: LiteLLMObserver
) -> None:
    """``litellm.responses`` details: instructions are the system prompt, the input the
    history; chained calls send only new items; usage under either API's names."""
    api = LiteLLMApi()
    info = details(
        "r1",
        [TASK],
        call_type="responses",
        input=[TASK],
        optional_params={"instructions": "You fix bugs.", "max_output_tokens": 64},
    )
    request = api.request(None, info)
    assert request.system == "You fix bugs."
    assert request.messages == [TASK]
    assert request.attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] == 64
    chained = api.request(
        None, {**info, "input": "more", "optional_params": {"previous_response_id": "resp_1"}}
    )
    assert chained.messages is None
    assert chained.previous_response_id == "resp_1"
    assert chained.new_items == [{"role": "user", "content": "more"}]
    result = {
        "id": "resp_2",
        "object": "response",
        "output": [],
        "usage": {"prompt_tokens": 33, "completion_tokens": 4},
    }
    response = api.response(result, request)
    assert (response.input_tokens, response.output_tokens) == (33, 4)


def test_metadata_marks_summarizers_and_model_info_the_window() -> None:
    """``usage_id`` or a ``type:condenser`` tag in any metadata the caller gave marks a
    summarizer; ``model_info.max_input_tokens`` is the configured window."""
    assert _read.is_summarizer({"litellm_params": {"metadata": {"usage_id": "condenser"}}})
    tags = {"metadata": {"tags": ["type:condenser"]}}
    assert _read.is_summarizer({"optional_params": {"extra_body": tags}})
    assert not _read.is_summarizer({"litellm_params": {"metadata": {"usage_id": "agent"}}})
    assert not _read.is_summarizer({"litellm_params": None})
    window = {"litellm_params": {"model_info": {"max_input_tokens": 32_000}}}
    assert _read.configured_window(window) == 32_000
    assert _read.configured_window({}) is None
    assert _read.provider_name({"litellm_params": {"custom_llm_provider": "bedrock"}}) == "bedrock"
    assert _read.provider_name({}) == "litellm"


def test_a_configured_window_is_the_one_pressure_is_read_against(cap: Capture) -> None:
    """The window a call was configured with (model info) is the turn's window."""
    runtime = Runtime(
        Settings(), tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider
    )
    observer = LiteLLMObserver(runtime, window_of=lambda details: 10_000)
    run_call(observer, "c1", [SYSTEM, TASK], completion("ok", 5_000))
    (span,) = chats(cap)
    assert span[sc.CONTEXT_WINDOW] == 10_000
    assert span[sc.PRESSURE_TOKEN_FRACTION] == pytest.approx(0.5)


def test_as_kept_takes_off_what_was_rendered_for_one_request() -> None:
    """Rendered messages go wherever they are; a suffixed last message gets its kept
    content back; anything else is left as sent."""
    files = {"role": "user", "content": "file a.py: ..."}
    last = {"role": "user", "content": "Question\n\nReply in English."}
    ephemeral = Ephemeral(
        rendered=frozenset({files["content"]}), suffixed=(last["content"], "Question")
    )
    kept = _read.as_kept([SYSTEM, files, TASK, last], ephemeral)
    assert kept == [SYSTEM, TASK, {"role": "user", "content": "Question"}]
    assert _read.as_kept([SYSTEM, TASK], ephemeral) == [SYSTEM, TASK]
    assert _scope.framework_call() is None


def test_the_span_is_current_for_litellm_own_logger_until_the_call_ends(
    observer: LiteLLMObserver,
) -> None:
    """``share`` makes the call's span current in the success callbacks' context (LiteLLM's
    OpenTelemetry logger writes onto it); ``success`` ends it and takes it out again."""
    info = details("c1", [SYSTEM, TASK])
    observer.pre_call(info)
    observer.post_call(info)
    observer.share(info)
    observer.share({"litellm_call_id": None})
    current = trace.get_current_span()
    assert current.is_recording()
    observer.success(info, completion("ok", 10), ordered=False)
    assert not current.is_recording()
    assert trace.get_current_span() is not current
