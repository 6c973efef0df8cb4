"""LiteLLM calls in flight: from LiteLLM's pre-call callback to its success or failure.

LiteLLM calls its callbacks at three moments, not all in the caller's thread:

- ``log_pre_api_call`` and ``log_post_api_call`` run in the caller's context, just
  before and just after the provider's HTTP request (for ``acompletion``, in the
  caller's task). The conversation scope (``conversation()``, ``report_phase``, an
  open ``compaction()``, a framework run) is read here, the history placed and the
  inference span started, exactly as the SDK wrappers do in ``_begin.begin``. From
  pre-call to post-call a :class:`FrameworkCall` with ``owns_calls`` is current, so
  an instrumented openai client that LiteLLM uses underneath (LiteLLM 1.81, which
  aider pins, calls ``chat.completions.with_raw_response.create``) records nothing:
  one call, one span.
- ``log_success_event`` runs on LiteLLM's logging thread pool for a synchronous call
  (a stream's once it is read to its end), ``async_log_success_event`` on the event
  loop for an async one; failures run inline. The call is finished there, keyed by
  ``litellm_call_id``. Calls of one conversation are finished in the order they
  began: a thread-pool success waits (at most :data:`ORDER_WAIT_S`) for the call
  before it, so a turn never overtakes the one before it.

A call whose success never comes (a stream left unread, a logging task LiteLLM
dropped under load) is ended as it is once :data:`IN_FLIGHT` newer calls began, and
at ``uninstall``. Every entry point is guarded: nothing here raises into LiteLLM.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from otel_compaction._bounded import BoundedMap
from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._api import ResponseInfo
from otel_compaction.instrument._begin import begin
from otel_compaction.instrument._call import InferenceCall
from otel_compaction.instrument._framework import FrameworkCall, enter_call, exit_call
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.litellm._hint import take_hint
from otel_compaction.instrument.litellm._read import (
    Ephemeral,
    LiteLLMApi,
    as_kept,
    configured_window,
    is_summarizer,
)
from otel_compaction.model import SummarizerCost
from otel_compaction.semconv import ErrorStage

FRAMEWORK = "litellm"
IN_FLIGHT = 4096
"""Calls remembered between their pre-call and their success or failure."""
ORDER_WAIT_S = 1.0
"""How long a thread-pool success waits for the conversation's previous call to finish
(LiteLLM runs the next call's success as soon as it returns; the pool may run two at once)."""

WindowOf = Callable[[Mapping[str, Any]], int | None]
Started = Callable[[Mapping[str, Any], Span], None]


class LiteLLMCallFailed(Exception):
    """Stands for the error of a failed call when LiteLLM reports none."""


@dataclass(slots=True)
class _InFlight:
    call: InferenceCall
    scope: FrameworkCall
    token: contextvars.Token[FrameworkCall | None] | None
    previous: threading.Event | None
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    shared: object | None = None
    """The OTel context token of the span made current for LiteLLM's own logger."""


def _kept(details: Mapping[str, Any], ephemeral: Ephemeral | None) -> dict[str, Any]:
    """The call details, their messages as the framework keeps them (see ``Ephemeral``)."""
    copy = dict(details)
    messages = copy.get("messages")
    if ephemeral is not None and isinstance(messages, list | tuple):
        copy["messages"] = as_kept(messages, ephemeral)
    return copy


class LiteLLMObserver:
    """Turns LiteLLM's callbacks into instrumented calls on ``runtime``.

    Args:
        runtime: the instrumentation's runtime (shared with the SDK wrappers).
        window_of: the context window a call was configured with (its ``model_info``,
            LiteLLM's model table), or None for the window table's.
        on_started: called in the caller's context with the call details and the
            call's inference span once it is started (the callback hands the span to
            LiteLLM's own OpenTelemetry logger).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        window_of: WindowOf = configured_window,
        on_started: Started | None = None,
    ) -> None:
        self.runtime = runtime
        self.enabled = True
        self._api = LiteLLMApi()
        self._window_of = window_of
        self._on_started = on_started
        self._lock = threading.Lock()
        self._calls: BoundedMap[str, _InFlight] = BoundedMap(IN_FLIGHT)
        self._last: BoundedMap[str, threading.Event] = BoundedMap(IN_FLIGHT)

    def __len__(self) -> int:
        return len(self._calls)

    # ------------------------------------------------------------ caller's context

    def pre_call(self, details: Mapping[str, Any]) -> None:
        """Start the call: scope read here, span started, SDK layer below told to stand by."""
        call_id = details.get("litellm_call_id")
        if not self.enabled or not isinstance(call_id, str) or not is_instrumentation_enabled():
            return
        with self.runtime.guard.stage(ErrorStage.REQUEST):
            with self._lock:
                if call_id in self._calls:
                    return  # the pre-call of a retry: the call is already running
            hint = take_hint()
            framework = self._scope(details, hint.conversation)
            token = enter_call(framework)
            call = begin(self.runtime, self._api, None, _kept(details, hint.ephemeral))
            if call is None:
                exit_call(framework, token)
                return
            self._track(call_id, _InFlight(call, framework, token, None))
            if hint.remember is not None and call.conversation is not None:
                hint.remember(call.conversation.id)
            if self._on_started is not None:
                self._on_started(details, call.span)

    def _scope(self, details: Mapping[str, Any], continued: str | None) -> FrameworkCall:
        """The call's framework scope: inside a framework run (LangChain's, aider's
        summarizer) its conversation and role; the conversation a framework hook says
        the agent continues (``continued``); a summarizer's call (by its metadata)
        belongs to the conversation last seen in this context."""
        outer = scope.framework_call()
        internal = is_summarizer(details) or (outer is not None and outer.internal)
        conversation = outer.conversation_id if outer is not None else ""
        conversation = conversation or continued or ""
        if internal and not conversation:
            conversation = scope.last_conversation() or ""
        if outer is not None and not outer.internal:
            outer.mark_observed()  # this layer records the turn: the run around it must not
        return FrameworkCall(
            conversation,
            id_given=outer.id_given if outer is not None else False,
            internal=internal,
            framework=FRAMEWORK,
            window=self._window_of(details),
            owns_calls=True,
        )

    def _track(self, call_id: str, record: _InFlight) -> None:
        conversation = record.call.conversation
        with self._lock:
            if conversation is not None:
                record.previous = self._last.get(conversation.id)
                self._last.put(conversation.id, record.done)
            evicted = self._calls.put(call_id, record)
        for old in evicted:
            self._abandon(old)

    def post_call(self, details: Mapping[str, Any]) -> None:
        """The provider answered: the SDK layer below may record calls again."""
        call_id = details.get("litellm_call_id")
        if not isinstance(call_id, str):
            return
        with self.runtime.guard.stage(ErrorStage.CONTEXT):
            with self._lock:
                record = self._calls.peek(call_id)
                token = record.token if record is not None else None
                if record is not None:
                    record.token = None
            if record is not None and token is not None:
                exit_call(record.scope, token)

    # ------------------------------------------------------------ any thread

    def share(self, details: Mapping[str, Any]) -> None:
        """Make the call's span current in this context (LiteLLM's success callbacks'),
        for LiteLLM's own OpenTelemetry logger behind us to write onto; ``success``
        takes it out again."""
        call_id = details.get("litellm_call_id")
        if not isinstance(call_id, str):
            return
        with self.runtime.guard.stage(ErrorStage.CONTEXT):
            with self._lock:
                record = self._calls.peek(call_id)
            if record is not None and record.shared is None and record.call.owns_span:
                record.shared = otel_context.attach(trace.set_span_in_context(record.call.span))

    def success(self, details: Mapping[str, Any], response: Any, *, ordered: bool) -> None:
        """Finish the call with its response (a stream's assembled one).

        ``ordered``: wait for the conversation's previous call first (a thread-pool
        success; never on an event loop).
        """
        record = self._take(details)
        if record is None:
            return
        try:
            if ordered and record.previous is not None:
                record.previous.wait(ORDER_WAIT_S)
            final = details.get("complete_streaming_response") or response
            info = None
            with self.runtime.guard.stage(ErrorStage.RESPONSE):
                info = self._api.response(final, record.call.request)
            record.call.finish(info)
            # A call the SDK layer itself took for a summarizer's (``summarized``, where
            # it reads summarizer calls from their request) has its cost counted there.
            summarized = getattr(record.call, "summarized", False)
            if record.call.internal and not summarized and info is not None:
                with self.runtime.guard.stage(ErrorStage.ANALYSIS):
                    self._summarizer_cost(record, info)
        finally:
            record.done.set()
            if record.shared is not None:
                with self.runtime.guard.stage(ErrorStage.CONTEXT):
                    otel_context.detach(record.shared)  # type: ignore[arg-type]

    def failure(self, details: Mapping[str, Any]) -> None:
        """Finish a failed call (its exception, as LiteLLM reports it, names the error)."""
        record = self._take(details)
        if record is None:
            return
        try:
            error = details.get("exception")
            if not isinstance(error, BaseException):
                error = LiteLLMCallFailed()
            record.call.finish(None, error)
        finally:
            record.done.set()

    def close(self) -> None:
        """Stop observing; end the calls still in flight as they are."""
        with self._lock:
            self.enabled = False
            records = self._calls.drain()
        for record in records:
            self._abandon(record)

    # ------------------------------------------------------------ internals

    def _take(self, details: Mapping[str, Any]) -> _InFlight | None:
        call_id = details.get("litellm_call_id")
        if not isinstance(call_id, str):
            return None
        with self._lock:
            record = self._calls.pop(call_id)
            token = record.token if record is not None else None
            if record is not None:
                record.token = None
        if record is not None:
            record.scope.closed = True
            if token is not None:  # no post-call came (a failure): reset here if this context can
                exit_call(record.scope, token)
        return record

    def _abandon(self, record: _InFlight) -> None:
        record.scope.closed = True
        try:
            record.call.finish(None)
        finally:
            record.done.set()

    def _summarizer_cost(self, record: _InFlight, info: ResponseInfo) -> None:
        """A summarizer's call is the next compaction's cost, not a turn."""
        conversation = record.call.conversation
        if conversation is None:
            return
        cost = SummarizerCost(
            input_tokens=info.input_tokens or 0,
            output_tokens=info.output_tokens or 0,
            duration_s=time.monotonic() - record.started,
        )
        self.runtime.registry.get(conversation.id).observe_summarizer(cost)
