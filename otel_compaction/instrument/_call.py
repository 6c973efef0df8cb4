"""One instrumented LLM call, from its request to the end of its response.

``_begin.begin`` reads the request, resolves the conversation, places the
history (inferring a rewrite), and starts the inference span. ``finish`` runs once,
after the response, the stream's end, an error or the stream's collection:
compactions first (explicit ones waiting in this context, the inferred rewrite,
the provider's own), then the turn, then attributes, metrics and the span's end.
Every stage is guarded: an internal error is logged once, counted, and the
caller's call goes on untouched.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from otel_compaction import semconv as sc
from otel_compaction._once import Once
from otel_compaction.config import MAX_ATTENTION_WINDOW
from otel_compaction.emit.attributes import transition_event_attributes, turn_attributes
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.inference.history import Placement
from otel_compaction.inference.messages import MessageFacts, value_digest
from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._api import RequestInfo, ResponseInfo
from otel_compaction.instrument._compactions import (
    Deferred,
    observe_compactions,
    observe_deferred,
)
from otel_compaction.instrument._content import inference_content
from otel_compaction.instrument._framework import FrameworkCall
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import ConversationRef, PendingItem
from otel_compaction.instrument._spans import (
    emit_rediscovery,
    emit_settled,
    end_with_error,
    response_attributes,
)
from otel_compaction.lineage.rediscovery import key_text
from otel_compaction.model import SummarizerCost, TurnAnalysis, TurnObservation
from otel_compaction.signals.tokens import tokens_for_chars

"""Makes ``finish`` run once per call (held for a flag's test and set only: one lock for
all calls rather than one built per call)."""


REREAD_SHARE = 0.75
"""A call that only extended its history is read again when its measured context is below
the last one plus this share of the new messages' estimate. The estimate (four characters
a token, :mod:`otel_compaction.signals.tokens`) is within about 30% of a real tokenizer's
count; 0.75 is about 1/1.3, so an estimate running 30% high still rereads nothing, and a
larger share would reread more often while finding no more clears than it hides."""


def _tool_keys(response: ResponseInfo | None) -> tuple[str, ...]:
    """The rediscovery key of each tool call of the response ("" where the input is unknown),
    or () when no input is known."""
    if response is None or not any(a is not None for a in response.tool_arguments):
        return ()
    args = response.tool_arguments
    return tuple(
        key_text(name, args[i] if i < len(args) else None) or ""
        for i, name in enumerate(response.tool_calls)
    )


class InferenceCall:
    """The state of one call between ``begin`` and ``finish``."""

    __slots__ = (
        "_ended",
        "conversation",
        "framework",
        "internal",
        "owns_span",
        "pending",
        "placement",
        "request",
        "runtime",
        "span",
        "start_ns",
        "started",
        "summarized",
    )

    def __init__(
        self,
        runtime: Runtime,
        request: RequestInfo,
        conversation: ConversationRef | None,
        placement: Placement | None,
        span: Span,
        *,
        owns_span: bool,
        internal: bool,
        framework: FrameworkCall | None,
        pending: Sequence[PendingItem],
        summarized: bool = False,
    ) -> None:
        self.runtime = runtime
        self.request = request
        self.conversation = conversation
        self.placement = placement
        self.span = span
        self.owns_span = owns_span
        self.internal = internal
        self.summarized = summarized
        """A summarizer's call (``inference.summarizer``): its answer is remembered as the
        summary the conversation's next request should carry, its cost goes on the compaction."""
        self.framework = framework
        self.pending = pending
        self.start_ns = time.time_ns()
        self.started = time.monotonic()
        self._ended = Once()

    # ------------------------------------------------------------ activation

    def enter(self) -> object | None:
        """Make the span current for the SDK call itself (and mark the call running)."""
        # Guarded with try/except rather than ``guard.stage`` blocks (the same guard): they
        # cost nothing when nothing fails, on every LLM call.
        try:
            return otel_context.attach(scope.call_context(self.span if self.owns_span else None))
        except Exception:  # noqa: BLE001 - never break the host: logged once, counted
            self.runtime.guard.failed("context")
        return None

    def leave(self, token: object | None) -> None:
        """Undo :meth:`enter` (in the same frame, never across a yield)."""
        if token is None:
            return
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - never break the host: logged once, counted
            self.runtime.guard.failed("context")

    # ------------------------------------------------------------ finish

    def finish(self, response: ResponseInfo | None, error: BaseException | None = None) -> None:
        """Analyse and emit everything of this call; the second and later calls do nothing."""
        if not self._ended.claim():
            return
        guard = self.runtime.guard
        try:
            analyzer = turn = None
            try:
                analyzer = self._analyzer()
            except Exception:  # noqa: BLE001 - never break the host: logged once, counted
                guard.failed("analysis")
            if analyzer is not None and response is not None:
                self._reread(analyzer, response)
            deferred: Sequence[Deferred] = ()
            if analyzer is not None and self._reveals_compactions(response):
                deferred = observe_compactions(self, analyzer, response)
            try:
                turn = self._turn(analyzer, response, error)
            except Exception:  # noqa: BLE001 - never break the host: logged once, counted
                guard.failed("analysis")
            if analyzer is not None and deferred:
                observe_deferred(self, analyzer, deferred)
            try:
                self._record(response, error, turn)
            except Exception:  # noqa: BLE001 - never break the host: logged once, counted
                guard.failed("response")
        finally:
            try:
                self._end(error)
            except Exception:  # noqa: BLE001 - never break the host: logged once, counted
                guard.failed("response")

    def _reread(self, analyzer: ConversationAnalyzer, response: ResponseInfo) -> None:
        """A context measured smaller than the last one plus most of what is new, on a call
        that only extended its history: the caller may have shortened messages in place
        (the tracker's copy holds the same objects, so the extension looked plain). Read
        the history again; a prune found becomes this call's rewrite."""
        placement = self.placement
        if placement is None or placement.rewrite is not None or placement.first or self.internal:
            return
        last, measured = analyzer.context_tokens, response.input_tokens
        if last is None or measured is None or self.conversation is None:
            return
        added = tokens_for_chars(sum([f.chars for f in placement.new_facts]))
        if measured >= last + added * REREAD_SHARE:
            return
        try:
            found = self.runtime.history.reread(self.conversation.id)
        except Exception:  # noqa: BLE001 - never break the host: logged once, counted
            self.runtime.guard.failed("analysis")
            return
        if found is not None:
            rewrite, chars = found
            self.placement = dataclasses.replace(placement, rewrite=rewrite, context_chars=chars)

    def _reveals_compactions(self, response: ResponseInfo | None) -> bool:
        """Whether ``observe_compactions`` has anything to look at (most calls: no)."""
        placement = self.placement
        return bool(
            self.pending
            or (placement is not None and placement.rewrite is not None)
            or (response is not None and response.compactions)
        )

    def _analyzer(self) -> ConversationAnalyzer | None:
        if self.conversation is None:
            return None
        return self.runtime.registry.get(self.conversation.id)

    def parent(self) -> otel_context.Context:
        """A context whose current span is this call's (for compaction spans)."""
        return trace.set_span_in_context(self.span)

    def _end(self, error: BaseException | None) -> None:
        if not self.owns_span:
            return
        if error is not None:
            end_with_error(self.span, error)
        self.span.end()

    # ------------------------------------------------------------ turn

    def _turn(
        self,
        analyzer: ConversationAnalyzer | None,
        response: ResponseInfo | None,
        error: BaseException | None,
    ) -> tuple[TurnAnalysis, TurnObservation] | None:
        if self.summarized and analyzer is not None and response is not None:
            analyzer.observe_summarizer(self._summarizer_cost(response))
        if analyzer is None or self.internal or self.request.compaction_call or error is not None:
            return None
        new = self.placement.new_facts if self.placement is not None else ()
        context = response.input_tokens if response is not None else None
        if context is None:
            chars = self.placement.context_chars if self.placement is not None else 0
            context = tokens_for_chars(chars + value_digest(self.request.system)[1])
        observation = TurnObservation(
            context_tokens=context,
            model=self.request.model or (response.model if response else None),
            new_content_tokens=tokens_for_chars(sum([f.content_chars for f in new])),
            tool_output_tokens=_tool_output_tokens(new),
            tool_calls=tuple(response.tool_calls) if response else (),
            tool_arguments=tuple(response.tool_arguments) if response else (),
            tool_keys=_tool_keys(response),
            window=self._framework_window(),
        )
        turn = analyzer.observe_turn(observation)
        if turn.settled is not None:
            emit_settled(self.runtime, turn.settled)
        if turn.rediscovered:
            baseline = analyzer.rediscovery_baseline
            emit_rediscovery(self.runtime, analyzer.conversation_id, turn.rediscovered, baseline)
        if self.framework is not None:
            self.framework.mark_observed()
        return turn, observation

    def _summarizer_cost(self, response: ResponseInfo) -> SummarizerCost:
        return SummarizerCost(
            calls=1,
            input_tokens=response.input_tokens or 0,
            output_tokens=response.output_tokens or 0,
            duration_s=time.monotonic() - self.started,
        )

    def _framework_window(self) -> int | None:
        """The window the framework was configured with, when it gave a usable one."""
        window = self.framework.window if self.framework is not None else None
        return window if isinstance(window, int) and window > 0 else None

    # ------------------------------------------------------------ telemetry

    def _record(
        self,
        response: ResponseInfo | None,
        error: BaseException | None,
        turn: tuple[TurnAnalysis, TurnObservation] | None,
    ) -> None:
        span, metrics = self.span, self.runtime.metrics
        # The measurements' exemplars name this call's span (not the caller's current one).
        context = trace.set_span_in_context(span)
        # Everything set after the response goes to the span in one call (one clean, one lock).
        attributes: dict[str, Any] = {}
        if turn is not None:
            analysis, observation = turn
            attributes = turn_attributes(analysis, observation)
            metrics.record_turn(analysis, self.request.provider, context=context)
            if analysis.transition is not None:
                span.add_event(
                    sc.EVENT_PHASE_TRANSITION, transition_event_attributes(analysis.transition)
                )
                metrics.record_transition(
                    analysis.transition, analysis.phase.source.value, context=context
                )
        if response is not None:
            self._remember(response)
        if self.owns_span and response is not None:
            # the other instrumentation, when it owns the span, owns the GenAI attributes
            attributes.update(response_attributes(response))
            if self.runtime.settings.capture_content:
                attributes.update(self._content(response))
        if attributes:
            span.set_attributes(attributes)
        if self.owns_span:
            self._usage_metrics(response, error, context)

    def _content(self, response: ResponseInfo) -> dict[str, Any]:
        new = self.placement.new_facts if self.placement is not None else ()
        messages = self.request.messages or self.request.new_items or ()
        inputs = list(messages[len(messages) - len(new) :]) if new else []
        return inference_content(
            self.request.system,
            inputs,
            response.echo,
            response.finish_reasons,
            self.runtime.settings.content_max_chars,
        )

    def _usage_metrics(
        self,
        response: ResponseInfo | None,
        error: BaseException | None,
        context: otel_context.Context,
    ) -> None:
        request = self.request
        self.runtime.metrics.record_call(
            time.monotonic() - self.started,
            response.input_tokens if response is not None else None,
            response.output_tokens if response is not None else None,
            operation=request.operation,
            provider=request.provider,
            model=request.model or None,
            error_type=type(error).__name__ if error is not None else None,
            context=context,
        )

    def _remember(self, response: ResponseInfo) -> None:
        conversation = self.conversation
        if conversation is None:
            return
        if response.response_id and self.request.chains_responses:
            self.runtime.response_conversations.put(
                response.response_id, (conversation.id, conversation.given)
            )
        if self.summarized:
            if response.output_text:
                text = "\n".join(response.output_text)
                self.runtime.history.remember_summarizer_output(conversation.id, text)
            return
        if self.placement is not None and response.echo and self.request.messages is not None:
            self.runtime.history.remember_response(conversation.id, response.echo)


def _tool_output_tokens(new: Sequence[MessageFacts]) -> tuple[int, ...]:
    """The token sizes of the newest tool outputs of ``new`` (message facts), oldest first: as
    many as the attention decay can weigh (``config.MAX_ATTENTION_WINDOW``); a first call
    over a long history brings thousands, the span does not carry them all."""
    newest: list[int] = []
    for fact in reversed(new):  # from the end: a first call's history is read no further
        if fact.tool_results:
            newest.extend(reversed(fact.tool_results))
            if len(newest) >= MAX_ATTENTION_WINDOW:
                break
    del newest[MAX_ATTENTION_WINDOW:]
    newest.reverse()
    return tuple([tokens_for_chars(c) for c in newest])
