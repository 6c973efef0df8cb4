"""The framework-call scope: what a client below LangChain sees; nothing recorded twice."""

from __future__ import annotations

import contextvars
from collections.abc import Generator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from otel_compaction import semconv as sc
from otel_compaction.instrument._framework import FrameworkCall, current_call
from otel_compaction.instrument._spans import emit_settled
from otel_compaction.instrument.langchain import CompactionCallbackHandler
from otel_compaction.model import TurnObservation
from otel_compaction.testing import Capture
from tests.langchain._agents import GrowingSummarizer, ScriptedAgentModel, run, summarizing_agent


class _SdkSeen:
    """What a stand-in for the SDK layer observed on each call below LangChain."""

    def __init__(self, handler: CompactionCallbackHandler) -> None:
        self.handler = handler
        self.calls: list[tuple[str, bool, bool]] = []

    def observe(self, *, record: bool) -> None:
        """Read the scope like the SDK layer does; ``record`` the turn as the SDK would."""
        call = current_call()
        assert isinstance(call, FrameworkCall)
        analyzer = self.handler.registry.get(call.conversation_id)
        last = analyzer.compactions[-1] if analyzer.compactions else None
        pending = last is not None and last.turn_index > analyzer.turn_index
        self.calls.append((call.conversation_id, call.internal, pending))
        if record and not call.internal:
            turn = analyzer.observe_turn(TurnObservation(context_tokens=1000))
            if turn.settled is not None:  # as the SDK layer does: it settles the compaction
                emit_settled(self.handler.runtime, turn.settled)
            call.mark_observed()


class SdkBackedAgentModel(ScriptedAgentModel):
    """An agent model whose client is instrumented: it records its own turns."""

    seen: Any = Field(default=None, exclude=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.observe(record=True)
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        if isinstance(message, AIMessage) and self.calls == 1:
            message.content = [{"type": "compaction", "content": "server summary"}]
        return result


class SdkBackedSummarizer(GrowingSummarizer):
    """A summarizer on the same instrumented client."""

    seen: Any = Field(default=None, exclude=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.observe(record=True)
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_calls_the_sdk_layer_recorded_are_not_recorded_again(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """With the client instrumented the handler emits no inference span and no server duplicate."""
    seen = _SdkSeen(handler)
    model = SdkBackedAgentModel(turns=16, seen=seen)
    summarizer = SdkBackedSummarizer(seen=seen)
    run(summarizing_agent(model, summarizer, trigger_tokens=800))

    assert not [s for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]
    compactions = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert {c[sc.COMPACTION_MODE] for c in compactions} == {"lossy"}  # no server duplicate
    assert len(compactions) == summarizer.count >= 3


def test_scope_names_the_thread_and_marks_summarizer_calls_internal(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Calls carry the thread id; summarizers are internal; the next call sees the compaction."""
    seen = _SdkSeen(handler)
    model = SdkBackedAgentModel(turns=16, seen=seen)
    summarizer = SdkBackedSummarizer(seen=seen)
    run(summarizing_agent(model, summarizer, trigger_tokens=800))

    assert {conversation for conversation, _, _ in seen.calls} == {"thread-1"}
    internal = [index for index, (_, flag, _) in enumerate(seen.calls) if flag]
    assert len(internal) == summarizer.count
    pending = [index for index, (_, _, flag) in enumerate(seen.calls) if flag]
    assert pending == [index + 1 for index in internal]  # the agent call right after each summary
    assert current_call() is None


def test_stream_closed_elsewhere_leaves_no_scope_behind(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A stream left open, then closed in another context, no longer shows as the current call."""
    model = FakeListChatModel(responses=["a long streamed answer"])
    stream = model.stream("hello", config={"metadata": {"thread_id": "s"}})
    assert isinstance(stream, Generator)  # what can be closed elsewhere
    next(stream)
    assert current_call() is not None  # the run is in flight in this context
    contextvars.copy_context().run(stream.close)
    assert current_call() is None
