"""The anthropic client, instrumented: GenAI spans, compaction attributes, metrics, SDK span."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor, conversation
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import (
    MODEL,
    SDK_SPAN,
    anthropic_client,
    async_anthropic_client,
    attrs,
    chat_spans,
    text_block,
)

if TYPE_CHECKING:
    from anthropic.types import MessageParam

TASK_TEXT = "The integration test fails; find out why."
TASK: MessageParam = {"role": "user", "content": TASK_TEXT}


def _agent_turns(client: anthropic.Anthropic, turns: int, task: MessageParam = TASK) -> list[Any]:
    """Run ``turns`` tool-using turns, growing the history as an agent does."""
    messages: list[Any] = [task]
    for _ in range(turns):
        message = client.messages.create(model=MODEL, max_tokens=512, messages=messages)
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": "x" * 400} for u in uses]
        messages.append({"role": "user", "content": results or "go on"})
    return messages


def _reads(n: int) -> list[Reply]:
    return [Reply("", tool_calls=(ToolCall("read_file", {"path": f"f{i}.py"}),)) for i in range(n)]


def test_create_emits_one_genai_client_span_with_usage(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A non-streaming create gives one CLIENT span named `chat {model}` with request and usage."""
    api = FakeLLMAPI([Reply("hello", cache_read_tokens=2)])
    message = anthropic_client(api).messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    (span,) = cap.spans
    a = attrs(span)
    assert span.name == f"chat {MODEL}"
    assert span.kind.name == "CLIENT"
    assert a[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert a[sc.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert a[sc.GEN_AI_REQUEST_MODEL] == MODEL
    assert a[sc.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert a[sc.GEN_AI_RESPONSE_ID] == message.id
    usage = message.usage
    total = usage.input_tokens + (usage.cache_read_input_tokens or 0)
    assert a[sc.GEN_AI_USAGE_INPUT_TOKENS] == total
    assert a[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 2
    assert a[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == usage.output_tokens
    assert a[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert a[sc.SERVER_ADDRESS] == "api.anthropic.com"


def test_turn_attributes_follow_the_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Each call is the next turn of one inferred conversation, with pressure and phase."""
    _agent_turns(anthropic_client(FakeLLMAPI(_reads(3))), 3)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [a[sc.TURN_INDEX] for a in spans] == [1, 2, 3]
    assert len({a[sc.CONVERSATION_ID] for a in spans}) == 1
    assert all(a[sc.CONVERSATION_ID_SOURCE] == "inferred" for a in spans)
    assert all(sc.GEN_AI_CONVERSATION_ID not in a for a in spans)
    assert spans[-1][sc.CONTEXT_TOKENS] > spans[0][sc.CONTEXT_TOKENS]
    assert 0 < spans[-1][sc.PRESSURE_TOKEN_FRACTION] < 1
    assert spans[-1][sc.TOOL_CALLS] == ("read_file",)
    assert spans[-1][sc.PHASE_NAME] == "explore"
    assert spans[1][sc.CONTEXT_NEW_CONTENT_TOKENS] > 100


def test_given_conversation_id_is_recorded_as_gen_ai_conversation_id(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Inside `conversation(id)` both conversation attributes carry the id."""
    with conversation("ticket-4711"):
        _agent_turns(anthropic_client(FakeLLMAPI()), 2)
    for span in chat_spans(cap):
        a = attrs(span)
        assert a[sc.GEN_AI_CONVERSATION_ID] == "ticket-4711"
        assert a[sc.CONVERSATION_ID] == "ticket-4711"
        assert a[sc.CONVERSATION_ID_SOURCE] == "explicit"


@SDK_SPAN
def test_client_conversation_id_option_names_the_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The anthropic client's own `conversation_id` option is a given conversation id."""
    client = anthropic_client(FakeLLMAPI(), open_telemetry={"conversation_id": "conv_123"})
    client.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    a = attrs(chat_spans(cap)[0])
    assert a[sc.GEN_AI_CONVERSATION_ID] == "conv_123"
    assert a[sc.CONVERSATION_ID_SOURCE] == "client"


def test_async_create_is_instrumented(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """AsyncMessages.create gives the same span and turn as the sync client."""
    client = async_anthropic_client(FakeLLMAPI(_reads(2)))

    async def run() -> None:
        messages: list[Any] = [TASK]
        for _ in range(2):
            message = await client.messages.create(model=MODEL, max_tokens=64, messages=messages)
            messages += [{"role": "assistant", "content": message.content}]
            messages += [{"role": "user", "content": "more"}]

    asyncio.run(run())
    spans = [attrs(s) for s in chat_spans(cap)]
    assert [a[sc.TURN_INDEX] for a in spans] == [1, 2]
    assert spans[0][sc.GEN_AI_PROVIDER_NAME] == "anthropic"


def test_metrics_are_recorded_per_call(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """Token usage, duration and token fraction histograms get one point set per call."""
    _agent_turns(anthropic_client(FakeLLMAPI()), 2)
    usage = cap.metric_points(sc.METRIC_TOKEN_USAGE.name)
    kinds = {dict(p.attributes)[sc.GEN_AI_TOKEN_TYPE]: p.count for p in usage}
    assert kinds == {"input": 2, "output": 2}
    (duration,) = cap.metric_points(sc.METRIC_OPERATION_DURATION.name)
    assert duration.count == 2
    assert dict(duration.attributes)[sc.GEN_AI_REQUEST_MODEL] == MODEL
    (fraction,) = cap.metric_points(sc.METRIC_TOKEN_FRACTION.name)
    assert fraction.count == 2


def test_metric_exemplars_name_the_call_span(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Each per-call measurement's exemplar carries its own inference span's ids, even
    with another span current around the call (dashboards open the call's trace)."""
    tracer = cap.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent run") as run:
        _agent_turns(anthropic_client(FakeLLMAPI()), 2)
    calls = {s.context.span_id for s in cap.spans if s.name == f"chat {MODEL}"}
    assert len(calls) == 2
    data = cap.metric_reader.get_metrics_data()  # one collection: it takes the exemplars
    assert data is not None
    points = {
        metric.name: [e for p in metric.data.data_points for e in p.exemplars]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    for name in (
        sc.METRIC_TOKEN_FRACTION.name,
        sc.METRIC_TOKEN_USAGE.name,
        sc.METRIC_OPERATION_DURATION.name,
    ):
        exemplars = points[name]
        assert exemplars, name
        assert {e.span_id for e in exemplars} <= calls, name
        assert {e.trace_id for e in exemplars} == {run.get_span_context().trace_id}, name


@SDK_SPAN
def test_sdk_built_in_span_is_suppressed_by_default(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The anthropic SDK's own per-call span does not appear: ours is the one inference span."""
    client = anthropic_client(FakeLLMAPI(), open_telemetry={"tracer_provider": cap.tracer_provider})
    client.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    assert [s.name for s in cap.spans] == [f"chat {MODEL}"]


@SDK_SPAN
def test_sdk_built_in_span_alone_when_not_instrumented(cap: Capture) -> None:
    """Without us, the SDK's own span is there (so the suppression test can fail)."""
    client = anthropic_client(FakeLLMAPI(), open_telemetry={"tracer_provider": cap.tracer_provider})
    client.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    assert [s.name for s in cap.spans] == ["anthropic.messages.create"]


@SDK_SPAN
@pytest.mark.parametrize("settings", [Settings(anthropic_sdk_span="keep")])
def test_sdk_built_in_span_kept_nests_under_ours(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """With `anthropic_sdk_span=keep` the SDK's span is a child of our inference span."""
    client = anthropic_client(FakeLLMAPI(), open_telemetry={"tracer_provider": cap.tracer_provider})
    client.messages.create(model=MODEL, max_tokens=64, messages=[TASK])
    sdk = cap.spans_named("anthropic.messages.create")[0]
    ours = chat_spans(cap)[0]
    assert sdk.parent is not None
    assert sdk.parent.span_id == ours.context.span_id


def test_beta_create_is_instrumented(cap: Capture, instrumented: CompactionInstrumentor) -> None:
    """client.beta.messages.create (where context_management lives) gets an inference span."""
    client = anthropic_client(FakeLLMAPI())
    client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": TASK_TEXT}], betas=["x"]
    )
    assert attrs(chat_spans(cap)[0])[sc.TURN_INDEX] == 1


def test_raw_response_calls_are_read_from_the_parsed_body(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """with_raw_response (ChatAnthropic uses it): usage comes from the parse the caller gets."""
    client = anthropic_client(FakeLLMAPI([Reply("raw")]))
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=[TASK])
    message = raw.parse()
    assert text_block(message.content[0]).text == "raw"
    assert raw.parse() is message  # the SDK's cache: nothing parsed twice, nothing consumed
    assert raw.http_response.json()["content"][0]["text"] == "raw"
    a = attrs(chat_spans(cap)[0])
    assert a[sc.TURN_INDEX] == 1
    assert a[sc.GEN_AI_USAGE_INPUT_TOKENS] == message.usage.input_tokens
    assert a[sc.CONTEXT_TOKENS] == message.usage.input_tokens


def test_async_raw_response_calls_are_read_too(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The async client's with_raw_response: parse() is awaited once and cached for the caller."""
    client = async_anthropic_client(FakeLLMAPI([Reply("raw")]))

    async def run() -> Any:
        raw = await client.messages.with_raw_response.create(
            model=MODEL, max_tokens=64, messages=[TASK]
        )
        parsed = raw.parse()  # a coroutine on current releases, the message on 0.x
        return await parsed if inspect.isawaitable(parsed) else parsed

    message = asyncio.run(run())
    assert message.content[0].text == "raw"
    a = attrs(chat_spans(cap)[0])
    assert a[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == message.usage.output_tokens


def test_metrics_and_analysis_do_not_depend_on_sampling(cap: Capture, instrument: Any) -> None:
    """With every span dropped by the sampler, token metrics and turns are still recorded."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    instrumentor = instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
    _agent_turns(anthropic_client(FakeLLMAPI(_reads(3))), 3)
    usage = cap.metric_points(sc.METRIC_TOKEN_USAGE.name)
    assert sum(p.count for p in usage) == 6
    runtime = instrumentor.runtime
    assert runtime is not None
    (conversation,) = runtime.registry.ids()
    assert runtime.registry.get(conversation).turn_index == 3


def test_a_first_call_over_a_long_history_reports_the_newest_128_tool_output_sizes(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A history of 300 tool results sent at once: the span carries the newest 128 sizes,
    oldest first, and the attention decay is the same as over all of them."""
    messages: list[Any] = [TASK]
    for n in range(300):
        use = {"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {"path": "a"}}
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "x" * (4 * (n + 1))}
        messages.append({"role": "user", "content": [result]})
    anthropic_client(FakeLLMAPI([Reply("done")])).messages.create(
        model=MODEL, max_tokens=64, messages=messages
    )
    (span,) = chat_spans(cap)
    sizes = list(attrs(span)[sc.TOOL_OUTPUT_TOKENS])
    assert len(sizes) == 128
    assert sizes == sorted(sizes)
    assert sizes[-1] > sizes[0]
    settings = Settings()
    weights = [settings.attention_decay**j for j in range(settings.attention_window)]
    window = attrs(span)[sc.CONTEXT_WINDOW]
    expected = sum(w * s for w, s in zip(weights, reversed(sizes), strict=False)) / window
    assert attrs(span)[sc.PRESSURE_ATTENTION_DECAY] == pytest.approx(expected, abs=1e-4)
