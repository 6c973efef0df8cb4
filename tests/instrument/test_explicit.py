"""The agent-facing API: conversation(), report_phase(), record_compaction(), compaction()."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import trace

from otel_compaction import semconv as sc
from otel_compaction.instrument import (
    CompactionInstrumentor,
    compaction,
    conversation,
    record_compaction,
    report_phase,
)
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.instrument.conftest import (
    MODEL,
    anthropic_client,
    async_anthropic_client,
    attrs,
    chat_spans,
    text_block,
)

TASK = {"role": "user", "content": "Migrate the billing schema."}
READ = Reply("", tool_calls=(ToolCall("read_file", {"path": "schema.sql"}),))


def _call(client: Any, messages: list[Any]) -> None:
    message = client.messages.create(model=MODEL, max_tokens=64, messages=messages)
    messages += [
        {"role": "assistant", "content": message.content},
        {"role": "user", "content": "ok " * 50},
    ]


def _compactions(cap: Capture) -> list[Any]:
    return cap.spans_named(sc.SPAN_COMPACTION)


def test_record_compaction_in_a_conversation_is_analysed_at_once(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """With a conversation id, record_compaction emits its span now and returns its id."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    tracer = cap.tracer_provider.get_tracer("agent")
    with conversation("c-1"), tracer.start_as_current_span("agent run") as run:
        messages: list[Any] = [TASK]
        for _ in range(3):
            _call(client, messages)
        compaction_id = record_compaction(
            summary="goal: migrate; next_action: write the migration",
            tokens_before=5000,
            tokens_after=800,
            trigger="token_pressure",
        )
        messages = [
            TASK,
            {"role": "user", "content": "goal: migrate; next_action: write the migration"},
        ]
        _call(client, messages)
    (span,) = _compactions(cap)
    a = attrs(span)
    assert a[sc.COMPACTION_ID] == compaction_id
    assert a[sc.COMPACTION_SOURCE] == "explicit"
    assert a[sc.COMPACTION_TRIGGER] == "token_pressure"
    assert a[sc.TURN_INDEX] == 4
    assert span.parent is not None
    assert span.parent.span_id == run.get_span_context().span_id
    last = attrs(chat_spans(cap)[-1])
    assert last[sc.GEN_AI_CONVERSATION_COMPACTED] is True
    (counted,) = [e for p in cap.metric_points(sc.METRIC_COMPACTIONS.name) for e in p.exemplars]
    assert counted.span_id == span.context.span_id  # the compaction's span, not "agent run"


def test_record_compaction_without_conversation_waits_for_the_next_call(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Without an id it is claimed by the next call, and the rewrite is not counted twice."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    messages: list[Any] = [TASK]
    for _ in range(3):
        _call(client, messages)
    assert record_compaction(summary="short summary", tokens_before=3000, tokens_after=500) is None
    assert _compactions(cap) == []
    messages = [TASK, {"role": "user", "content": "short summary"}]
    _call(client, messages)
    (span,) = _compactions(cap)
    a = attrs(span)
    assert a[sc.COMPACTION_SOURCE] == "explicit"
    assert a[sc.CONVERSATION_ID] == attrs(chat_spans(cap)[0])[sc.CONVERSATION_ID]
    assert span.parent is not None
    assert span.parent.span_id == chat_spans(cap)[-1].context.span_id


def test_compaction_block_parents_the_summarizer_call_which_is_no_turn(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """LLM calls inside `with compaction()` are the compaction's children, not turns."""

    def script(request: RecordedRequest) -> Reply:
        return Reply("goal: migrate") if request.body.get("system") else READ

    client = anthropic_client(FakeLLMAPI(script))
    messages: list[Any] = [TASK]
    for _ in range(3):
        _call(client, messages)
    with compaction(trigger="token_pressure", tokens_before=4000) as block:
        summary = client.messages.create(
            model=MODEL,
            max_tokens=64,
            system="Summarize the conversation.",
            messages=[*messages, {"role": "user", "content": "Summarize."}],
        )
        summary_text = text_block(summary.content[0]).text
        block.set_result(summary=summary_text, tokens_after=600)
    messages = [TASK, {"role": "user", "content": summary_text}, *messages[-2:]]
    _call(client, messages)
    (span,) = _compactions(cap)
    a = attrs(span)
    chats = chat_spans(cap)
    summarizer = chats[3]
    assert summarizer.parent is not None
    assert summarizer.parent.span_id == span.context.span_id
    assert sc.TURN_INDEX not in attrs(summarizer)
    assert a[sc.COMPACTION_SOURCE] == "explicit"
    assert a[sc.CONVERSATION_ID] == attrs(chats[0])[sc.CONVERSATION_ID]
    assert a[sc.TURN_INDEX] == 4
    assert block.compaction_id == a[sc.COMPACTION_ID]
    assert attrs(chats[4])[sc.TURN_INDEX] == 4
    assert attrs(chats[4])[sc.GEN_AI_CONVERSATION_COMPACTED] is True


def test_compaction_block_left_by_an_exception_records_no_compaction(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A summarizer failure propagates; the span is marked failed and nothing is recorded."""
    with pytest.raises(RuntimeError, match="summarizer down"), conversation("c-2"), compaction():
        raise RuntimeError("summarizer down")
    (span,) = _compactions(cap)
    assert not span.status.is_ok
    assert attrs(span)[sc.SUMMARY_FAILED] is True
    assert sc.COMPACTION_ID not in attrs(span)


def test_reported_phases_land_on_spans_with_a_transition_event(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """report_phase sets the phase; a change is a span event and a transitions counter."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    messages: list[Any] = [TASK]
    with conversation("c-3"):
        report_phase("explore", confidence=0.9)
        _call(client, messages)
        report_phase("patch", distribution={"patch": 0.8, "hypothesize": 0.2})
        _call(client, messages)
    first, second = (attrs(s) for s in chat_spans(cap))
    assert first[sc.PHASE_NAME] == "explore"
    assert first[sc.PHASE_SOURCE] == "reported"
    assert second[sc.PHASE_NAME] == "patch"
    (event,) = chat_spans(cap)[1].events
    assert event.name == sc.EVENT_PHASE_TRANSITION
    assert dict(event.attributes or {})[sc.PHASE_FROM] == "explore"
    assert dict(event.attributes or {})[sc.PHASE_TO] == "patch"
    assert cap.counter_total(sc.METRIC_PHASE_TRANSITIONS.name, {sc.PHASE_TO: "patch"}) == 1


def test_phase_reported_without_conversation_applies_to_the_next_call(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A report with no conversation waits for the next instrumented call in this context."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    report_phase("verify", confidence=0.95)
    _call(client, [TASK])
    a = attrs(chat_spans(cap)[0])
    assert a[sc.PHASE_NAME] == "verify"
    assert a[sc.PHASE_SOURCE] == "reported"


def test_unknown_mode_is_a_value_error() -> None:
    """A typo in the mode is a programming error and says what is allowed."""
    with pytest.raises(ValueError, match="lossy"):
        record_compaction(mode="summarize", conversation_id="x")


def test_conversations_follow_asyncio_tasks(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Concurrent tasks in different conversation() blocks keep their own ids."""
    client = async_anthropic_client(FakeLLMAPI(default=READ))

    async def agent(name: str) -> None:
        with conversation(name):
            messages: list[Any] = [{"role": "user", "content": f"task {name}"}]
            for _ in range(3):
                message = await client.messages.create(
                    model=MODEL, max_tokens=64, messages=messages
                )
                messages += [{"role": "assistant", "content": message.content}]
                messages += [{"role": "user", "content": "next"}]
                await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(agent("alpha"), agent("beta"))

    asyncio.run(main())
    spans = [attrs(s) for s in chat_spans(cap)]
    for name in ("alpha", "beta"):
        mine = [s for s in spans if s[sc.GEN_AI_CONVERSATION_ID] == name]
        assert [s[sc.TURN_INDEX] for s in mine] == [1, 2, 3]


def test_api_works_without_the_instrumentor(cap: Capture) -> None:
    """record_compaction and report_phase never fail when nothing is instrumented."""
    report_phase("explore", conversation_id="lonely")
    assert record_compaction(summary="s", conversation_id="lonely") is not None
    assert trace.get_current_span() is trace.INVALID_SPAN
