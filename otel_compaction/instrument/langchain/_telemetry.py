"""Spans and metrics of what the LangChain handler recorded, on the shared runtime.

Compaction spans go through the SDK layer's ``emit_compaction`` (same
attributes, same lineage links, same metrics, whichever layer saw the
compaction). A ``chat {model}`` inference span is opened only for a chat-model
call that no instrumented client below LangChain recorded itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.emit.attributes import transition_event_attributes, turn_attributes
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import ConversationRef
from otel_compaction.instrument._spans import emit_compaction, emit_settled
from otel_compaction.model import CompactionAnalysis, TurnAnalysis, TurnObservation


@dataclass(frozen=True, slots=True)
class ChatCall:
    """What the inference span of one chat-model call needs besides the analysis."""

    provider: str | None
    model: str | None
    start_ns: int
    parent: otel_context.Context
    input_tokens: int | None = None
    output_tokens: int | None = None


class LangChainTelemetry:
    """Opens the handler's spans and records its metrics through ``runtime``."""

    __slots__ = ("_runtime",)

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    @property
    def metrics(self) -> CompactionMetrics:
        """The metric instruments (also used to count the handler's own errors)."""
        return self._runtime.metrics

    def compaction(
        self,
        analysis: CompactionAnalysis,
        *,
        start_ns: int | None = None,
        summary_text: str | None = None,
    ) -> None:
        """Emit the ``compaction`` span of ``analysis`` and record its metrics."""
        emit_compaction(self._runtime, analysis, summary=summary_text, start_ns=start_ns)

    def settled(self, settled: CompactionAnalysis) -> None:
        """Emit what a later call's settlement of a compaction added (late findings)."""
        emit_settled(self._runtime, settled)

    def turn(
        self,
        analysis: TurnAnalysis,
        observation: TurnObservation,
        conversation: ConversationRef,
        call: ChatCall,
    ) -> None:
        """Emit the inference span of a call no instrumented client recorded."""
        attributes = _call_attributes(call)
        attributes.update(conversation.attributes())
        attributes.update(turn_attributes(analysis, observation))
        name = f"{sc.OPERATION_CHAT} {call.model}" if call.model else sc.OPERATION_CHAT
        span = self._runtime.tracer.start_span(
            name,
            context=call.parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=call.start_ns,
        )
        metrics = self._runtime.metrics
        context = trace.set_span_in_context(span)  # the exemplars name this span
        if analysis.transition is not None:
            span.add_event(
                sc.EVENT_PHASE_TRANSITION, transition_event_attributes(analysis.transition)
            )
            metrics.record_transition(
                analysis.transition, analysis.phase.source.value, context=context
            )
        span.end()
        metrics.record_turn(analysis, call.provider, context=context)


def _call_attributes(call: ChatCall) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT}
    optional = {
        sc.GEN_AI_PROVIDER_NAME: call.provider,
        sc.GEN_AI_REQUEST_MODEL: call.model,
        sc.GEN_AI_USAGE_INPUT_TOKENS: call.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: call.output_tokens,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def current_context() -> otel_context.Context:
    """The OTel context of the caller (the parent of the spans opened later)."""
    return otel_context.get_current()
