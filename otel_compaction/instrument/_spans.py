"""Spans of the instrumentation: the inference span, its enrichment, compaction spans.

The inference span is ``{operation} {model}``, kind CLIENT, started in the
caller's context but never made current across a stream (it is current only
inside the synchronous or awaited SDK call). A ``compaction`` span (INTERNAL)
is a child of the inference span of the first call that sees the compacted
context, linked to the span of its lineage parent.

When the caller's current span is already a GenAI inference span of another
instrumentation (OpenLLMetry, OpenInference, the official python-genai ones, a
framework's LLM span) we add our attributes to it instead of opening a second
inference span for the same call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.emit.attributes import (
    compaction_attributes,
    finding_attributes,
    rediscovery_attributes,
)
from otel_compaction.instrument._api import RequestInfo, ResponseInfo
from otel_compaction.instrument._content import summary_content
from otel_compaction.instrument._runtime import SCOPE, Runtime
from otel_compaction.model import CompactionAnalysis, Rediscovery, RediscoveryBaseline

# Attributes by which other instrumentations mark their LLM spans.
_OPENINFERENCE_KIND = "openinference.span.kind"
_OPENLLMETRY_TYPE = "llm.request.type"


def foreign_inference_span(runtime: Runtime) -> Span | None:
    """The current span, if it is another instrumentation's open LLM span not yet enriched."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    attributes: Mapping[str, Any] | None = getattr(span, "attributes", None)
    scope = getattr(getattr(span, "instrumentation_scope", None), "name", None)
    if not attributes or scope == SCOPE:
        return None
    is_llm = (
        attributes.get(sc.GEN_AI_OPERATION_NAME) in sc.INFERENCE_OPERATIONS
        or attributes.get(_OPENINFERENCE_KIND) == "LLM"
        or attributes.get(_OPENLLMETRY_TYPE) in ("chat", "completion")
    )
    if not is_llm:
        return None
    key = span.get_span_context().span_id
    if runtime.enriched.get(key):
        return None  # one call per foreign span: a second call gets its own span
    runtime.enriched.put(key, True)
    return span


def start_inference_span(
    runtime: Runtime, request: RequestInfo, attributes: Mapping[str, AttributeValue]
) -> Span:
    """Start the CLIENT span of one call in the current context (not made current)."""
    name = f"{request.operation} {request.model}" if request.model else request.operation
    return runtime.tracer.start_span(
        name, kind=SpanKind.CLIENT, attributes={**request.attributes, **attributes}
    )


def response_attributes(response: ResponseInfo) -> dict[str, AttributeValue]:
    """``gen_ai.response.*`` and ``gen_ai.usage.*`` of a response."""
    out: dict[str, AttributeValue] = {}
    if response.response_id is not None:
        out[sc.GEN_AI_RESPONSE_ID] = response.response_id
    if response.model is not None:
        out[sc.GEN_AI_RESPONSE_MODEL] = response.model
    if response.input_tokens is not None:
        out[sc.GEN_AI_USAGE_INPUT_TOKENS] = response.input_tokens
    if response.output_tokens is not None:
        out[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = response.output_tokens
    if response.cache_read_tokens is not None:
        out[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = response.cache_read_tokens
    if response.cache_write_tokens is not None:
        out[sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] = response.cache_write_tokens
    if response.finish_reasons:
        out[sc.GEN_AI_RESPONSE_FINISH_REASONS] = list(response.finish_reasons)
    return out


def end_with_error(span: Span, error: BaseException) -> None:
    """Mark ``span`` failed with ``error.type`` (the class name, never the message)."""
    if isinstance(error, Exception):
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        span.set_attribute(sc.ERROR_TYPE, type(error).__name__)


def emit_compaction(
    runtime: Runtime,
    analysis: CompactionAnalysis,
    *,
    parent: Context | None = None,
    span: Span | None = None,
    summary: str | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> None:
    """Emit (or finish, when ``span`` is the open block's) the ``compaction`` span;
    ``attributes``: what the instrumentation adds to the analysis' own."""
    record = analysis.record
    if analysis.settled is not None:
        emit_settled(runtime, analysis.settled)
    extra = attributes
    attributes = compaction_attributes(analysis)
    if extra:
        attributes.update(extra)
    if runtime.settings.capture_content:
        attributes.update(summary_content(summary, runtime.settings.content_max_chars))
    parent_context = runtime.compaction_spans.get(record.parent_id) if record.parent_id else None
    links = [Link(parent_context)] if parent_context is not None else []
    if span is None:
        span = runtime.tracer.start_span(
            sc.SPAN_COMPACTION,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=start_ns or time.time_ns(),
        )
    else:
        span.set_attributes(attributes)
        for link in links:
            span.add_link(link.context)
    runtime.compaction_spans.put(record.compaction_id, span.get_span_context())
    runtime.metrics.record_compaction(analysis, context=trace.set_span_in_context(span))
    if record.settled:
        span.end(end_time=end_ns)
    else:  # the next call measures its size after: the span waits for it
        runtime.unsettled.hold(record.compaction_id, span, end_ns or time.time_ns(), analysis)


def emit_settled(runtime: Runtime, settled: CompactionAnalysis) -> None:
    """What a compaction's settlement by a later call added: the tokens it reclaimed, and
    its late findings. On its span when that is still open (then ended at the time it was
    recorded); else a ``compaction.finding`` span per finding, a child of the compaction's
    span, linked to it."""
    held = runtime.unsettled.take(settled.record.compaction_id)
    if held is not None:
        span, end_ns, analysis = held
        span.set_attributes(compaction_attributes(analysis.merged(settled)))
        runtime.metrics.record_settled(settled, context=trace.set_span_in_context(span))
        span.end(end_time=end_ns)
        return
    compaction = runtime.compaction_spans.get(settled.record.compaction_id)
    context = (
        trace.set_span_in_context(NonRecordingSpan(compaction)) if compaction is not None else None
    )
    for finding in settled.findings:
        span = runtime.tracer.start_span(
            sc.SPAN_FINDING,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=finding_attributes(finding),
            links=[Link(compaction)] if compaction is not None else [],
        )
        span.end()
    runtime.metrics.record_settled(settled, context=context)


def emit_rediscovery(
    runtime: Runtime,
    conversation_id: str,
    results: tuple[Rediscovery, ...],
    baseline: RediscoveryBaseline | None,
) -> None:
    """What compactions' rediscovery horizons measured, known calls after the compaction span
    ended: a ``compaction.rediscovery`` span each, a child of the compaction's span and linked
    to it (as late findings are), and the histogram."""
    for result in results:
        compaction = runtime.compaction_spans.get(result.compaction_id or "")
        context = (
            trace.set_span_in_context(NonRecordingSpan(compaction))
            if compaction is not None
            else None
        )
        span = runtime.tracer.start_span(
            sc.SPAN_REDISCOVERY,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=rediscovery_attributes(conversation_id, result, baseline),
            links=[Link(compaction)] if compaction is not None else [],
        )
        span.end()
        runtime.metrics.record_rediscovery(result, context=context)


def close_rediscovery(runtime: Runtime) -> None:
    """At exit: the open rediscovery horizons of every conversation, cut short (what a
    compaction near the end of a run cost is still measured over the calls that came)."""
    for conversation_id in runtime.registry.ids():
        analyzer = runtime.registry.peek(conversation_id)
        if analyzer is None:
            continue
        results = analyzer.finish_rediscovery()
        if results:
            emit_rediscovery(runtime, conversation_id, results, analyzer.rediscovery_baseline)
