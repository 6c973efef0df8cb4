"""Turning replayed transcript events into the spans the live instrumentation would emit.

Per conversation, one trace: a root ``invoke_agent {agent}`` span, and under it
an inference span ``chat {model}`` per call (kind CLIENT, ``gen_ai.*`` usage
and the ``compaction.*`` signals) and a ``compaction`` span per compaction
(kind INTERNAL, linked to its lineage parent's span; status ERROR when its
summary step failed). A finding about a compaction whose span is written already
(one the next compaction judged again, ``hindsight``) is a ``compaction.finding``
span linked to it, as the live instrumentation emits it, and so is what a compaction's
rediscovery horizon measured (a ``compaction.rediscovery`` span under the compaction's,
when the horizon closes or the input ends). Attributes come from the
same ``emit.attributes`` builders as the live spans, plus the raw inputs the
processor needs to recompute every verdict (new content, tool calls and their
categories, tool output sizes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.emit.attributes import (
    compaction_attributes,
    compaction_status,
    finding_attributes,
    rediscovery_attributes,
    transition_event_attributes,
    truncate_content,
    turn_attributes,
)
from otel_compaction.model import (
    CompactionAnalysis,
    Rediscovery,
    RediscoveryBaseline,
    TurnAnalysis,
)
from otel_compaction.signals.tools import ToolCategorizer
from otel_compaction.transcripts.events import (
    CompactionEvent,
    ConversationInfo,
    TurnEvent,
)
from otel_compaction.transcripts.replay import Step

_NS = 1_000_000_000
_STEP_NS = 1_000_000  # 1 ms between events whose file gave no time


@dataclass(slots=True)
class _Trace:
    """One conversation's open root span and what its children need."""

    info: ConversationInfo
    root: Span | None = None
    last_ns: int = 0
    spans: dict[str, SpanContext] = field(default_factory=dict)
    pending: tuple[CompactionEvent, CompactionAnalysis] | None = None
    """A compaction waiting for the first call after it (its size after, late findings)."""


class SpanWriter:
    """Writes the spans of replayed steps through an OTel ``Tracer``.

    Args:
        tracer: where the spans go (its provider's processors export them).
        settings: content capture and its limit, tool category overrides.
        start_ns: the time given to events whose file recorded none.
    """

    def __init__(self, tracer: Tracer, settings: Settings, start_ns: int) -> None:
        self._tracer = tracer
        self._settings = settings
        self._categorize = ToolCategorizer(settings.tool_categories)
        self._clock_ns = start_ns
        self._traces: dict[str, _Trace] = {}
        self.spans_written = 0

    def write(self, step: Step) -> None:
        """Emit the span(s) of one replayed step."""
        event = step.event
        if isinstance(event, ConversationInfo):
            self._traces.setdefault(event.conversation_id, _Trace(event))
        elif isinstance(event, TurnEvent) and step.turn is not None:
            self._flush(self._state(event.conversation_id), step.turn.settled)
            self._turn(event, step.turn)
        elif isinstance(event, CompactionEvent) and step.compaction is not None:
            state = self._state(event.conversation_id)
            self._flush(state, step.compaction.settled)
            if step.compaction.record.settled:
                self._compaction(event, step.compaction)
            else:  # written with the first call after it, which settles it
                state.pending = (event, step.compaction)

    def settle(self, settled: CompactionAnalysis) -> None:
        """Write a pending compaction with what the end of input added (no call followed)."""
        self._flush(self._state(settled.record.conversation_id), settled)

    def rediscovered(
        self,
        conversation_id: str,
        results: tuple[Rediscovery, ...],
        baseline: RediscoveryBaseline | None,
    ) -> None:
        """What compactions' rediscovery horizons measured, as the live instrumentation emits
        it: a ``compaction.rediscovery`` span each, a child of the compaction's span and
        linked to it, at the time of the call that closed the horizon."""
        state = self._state(conversation_id)
        for result in results:
            compaction = state.spans.get(result.compaction_id or "")
            start_ns, _ = self._times(state, None, None)
            context = (
                trace.set_span_in_context(NonRecordingSpan(compaction))
                if compaction is not None
                else self._parent(state, start_ns)
            )
            span = self._tracer.start_span(
                sc.SPAN_REDISCOVERY,
                context=context,
                kind=SpanKind.INTERNAL,
                attributes=rediscovery_attributes(conversation_id, result, baseline),
                links=[Link(compaction)] if compaction is not None else None,
                start_time=start_ns,
            )
            span.end(end_time=start_ns)
            self.spans_written += 1

    def close(self) -> None:
        """End every conversation's root span (at its last child's end)."""
        for state in self._traces.values():
            self._flush(state)
            if state.root is not None:
                state.root.end(end_time=state.last_ns)
                state.root = None
                self.spans_written += 1

    def _times(self, state: _Trace, start: float | None, end: float | None) -> tuple[int, int]:
        if start is None:
            start_ns = max(state.last_ns, self._clock_ns) + _STEP_NS
        else:
            start_ns = int(start * _NS)
        end_ns = max(int(end * _NS), start_ns) if end is not None else start_ns + _STEP_NS
        state.last_ns = max(state.last_ns, end_ns)
        self._clock_ns = max(self._clock_ns, end_ns)
        return start_ns, end_ns

    def _parent(self, state: _Trace, start_ns: int) -> Context:
        if state.root is None:
            agent = state.info.agent or "agent"
            attributes: dict[str, AttributeValue] = {
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: agent,
                sc.CONVERSATION_ID: state.info.conversation_id,
            }
            if state.info.session_id:
                attributes[sc.GEN_AI_CONVERSATION_ID] = state.info.session_id
            state.root = self._tracer.start_span(
                f"{sc.OPERATION_INVOKE_AGENT} {agent}",
                context=trace.set_span_in_context(trace.INVALID_SPAN),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=start_ns,
            )
        return trace.set_span_in_context(state.root)

    def _state(self, conversation_id: str) -> _Trace:
        state = self._traces.get(conversation_id)
        if state is None:
            state = self._traces[conversation_id] = _Trace(ConversationInfo(conversation_id))
        return state

    def _turn(self, event: TurnEvent, analysis: TurnAnalysis) -> None:
        state = self._state(event.conversation_id)
        call, obs = event.call, event.observation
        start_ns, end_ns = self._times(state, call.start_time, call.end_time)
        context = self._parent(state, start_ns)
        attributes = self._call_attributes(state, event)
        attributes.update(turn_attributes(analysis, obs))
        if obs.tool_calls:
            attributes[sc.TOOL_CATEGORIES] = self._categories(event)
        if obs.tool_output_tokens:
            attributes[sc.TOOL_OUTPUT_TOKENS] = list(obs.tool_output_tokens)
        name = f"{sc.OPERATION_CHAT} {obs.model}" if obs.model else sc.OPERATION_CHAT
        span = self._tracer.start_span(
            name, context=context, kind=SpanKind.CLIENT, attributes=attributes, start_time=start_ns
        )
        if analysis.transition is not None:
            span.add_event(
                sc.EVENT_PHASE_TRANSITION,
                transition_event_attributes(analysis.transition),
                timestamp=start_ns,
            )
        span.end(end_time=end_ns)
        self.spans_written += 1

    def _call_attributes(self, state: _Trace, event: TurnEvent) -> dict[str, AttributeValue]:
        call = event.call
        values: dict[str, AttributeValue | None] = {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: call.provider,
            sc.GEN_AI_REQUEST_MODEL: event.observation.model,
            sc.GEN_AI_RESPONSE_ID: call.response_id,
            sc.GEN_AI_USAGE_INPUT_TOKENS: call.input_tokens,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: call.output_tokens,
            sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: call.cache_read_tokens,
            sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: call.cache_write_tokens,
            sc.GEN_AI_CONVERSATION_ID: state.info.session_id,
        }
        return {k: v for k, v in values.items() if v is not None}

    def _categories(self, event: TurnEvent) -> list[str]:
        obs = event.observation
        args = obs.tool_arguments
        return [
            self._categorize(name, args[i] if i < len(args) else None).value
            for i, name in enumerate(obs.tool_calls)
        ]

    def _flush(self, state: _Trace, settled: CompactionAnalysis | None = None) -> None:
        """Write the pending compaction, completed by ``settled`` when that is its settlement;
        findings about a compaction written already become finding spans."""
        pending, state.pending = state.pending, None
        if pending is not None:
            event, analysis = pending
            if (
                settled is not None
                and settled.record.compaction_id == analysis.record.compaction_id
            ):
                analysis, settled = analysis.merged(settled), None
            self._compaction(event, analysis)
        if settled is not None and settled.findings:
            self._late_findings(state, settled)

    def _late_findings(self, state: _Trace, settled: CompactionAnalysis) -> None:
        compaction = state.spans.get(settled.record.compaction_id)
        start_ns, _ = self._times(state, None, None)
        for finding in settled.findings:
            span = self._tracer.start_span(
                sc.SPAN_FINDING,
                context=self._parent(state, start_ns),
                kind=SpanKind.INTERNAL,
                attributes=finding_attributes(finding),
                links=[Link(compaction)] if compaction is not None else None,
                start_time=start_ns,
            )
            span.end(end_time=start_ns)
            self.spans_written += 1

    def _compaction(self, event: CompactionEvent, analysis: CompactionAnalysis) -> None:
        state = self._state(event.conversation_id)
        obs, record = event.observation, analysis.record
        start_ns, end_ns = self._times(state, obs.timestamp, event.end_time)
        context = self._parent(state, start_ns)
        attributes = compaction_attributes(analysis)
        if state.info.session_id:
            attributes[sc.GEN_AI_CONVERSATION_ID] = state.info.session_id
        if self._settings.capture_content and obs.summary_text:
            text, cut = truncate_content(obs.summary_text, self._settings.content_max_chars)
            attributes[sc.SUMMARY_TEXT] = text
            if cut:
                attributes[sc.CONTENT_TRUNCATED] = True
        parent = state.spans.get(record.parent_id) if record.parent_id else None
        span = self._tracer.start_span(
            sc.SPAN_COMPACTION,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=[Link(parent)] if parent is not None else None,
            start_time=start_ns,
        )
        status = compaction_status(record)
        if status is not None:
            span.set_status(status)
        span.end(end_time=end_ns)
        state.spans[record.compaction_id] = span.get_span_context()
        self.spans_written += 1
