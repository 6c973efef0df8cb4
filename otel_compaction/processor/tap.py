"""Tap-mode output: each finding as a ``compaction.finding`` span in the conversation's trace.

The Collector fans the agents' traces out to Jaeger and to the processor; the
processor sends back only what it found. A finding span is a child of the
flagged compaction span and links to it, so Jaeger shows it under the
compaction it is about; its span id is derived from the compaction id and the
finding kind, so a replayed finding is the same span, not a second one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.resources import SERVICE_NAME

from otel_compaction.emit.attributes import finding_attributes, rediscovery_attributes
from otel_compaction.model import Finding, Rediscovery, RediscoveryBaseline
from otel_compaction.otlp.attributes import key_values
from otel_compaction.semconv import SCHEMA_URL, SPAN_FINDING, SPAN_REDISCOVERY

SCOPE_NAME = "otel_compaction.processor"


@dataclass(frozen=True, slots=True)
class FindingContext:
    """A finding and the span (or log record) of the compaction it is about."""

    finding: Finding
    trace_id: bytes
    span_id: bytes
    time_ns: int
    end_ns: int = 0


@dataclass(frozen=True, slots=True)
class RediscoveryContext:
    """What a compaction's rediscovery horizon measured, and the span of that compaction
    (empty ids when it is no longer known)."""

    conversation_id: str
    result: Rediscovery
    baseline: RediscoveryBaseline | None
    trace_id: bytes
    span_id: bytes
    time_ns: int


def finding_span_id(finding: Finding) -> bytes:
    """A stable 8-byte span id for a finding (same finding, same id)."""
    key = f"{finding.conversation_id}\x00{finding.compaction_id}\x00{finding.kind.value}"
    return hashlib.blake2b(key.encode(), digest_size=8).digest()


def finding_span(ctx: FindingContext) -> Span:
    """The ``compaction.finding`` span of one finding."""
    trace_id = ctx.trace_id
    if len(trace_id) != 16 or not any(trace_id):
        # A compaction seen only in a log event: one stable trace per conversation.
        key = ctx.finding.conversation_id.encode()
        trace_id = hashlib.blake2b(key, digest_size=16).digest()
    start = ctx.time_ns or time.time_ns()
    span = Span(
        trace_id=trace_id,
        span_id=finding_span_id(ctx.finding),
        name=SPAN_FINDING,
        kind=Span.SpanKind.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=max(ctx.end_ns, start),
    )
    if trace_id == ctx.trace_id and len(ctx.span_id) == 8 and any(ctx.span_id):
        span.parent_span_id = ctx.span_id
        span.links.add(trace_id=ctx.trace_id, span_id=ctx.span_id)
    span.attributes.extend(key_values(finding_attributes(ctx.finding)))
    return span


def rediscovery_span(ctx: RediscoveryContext) -> Span:
    """The ``compaction.rediscovery`` span of one compaction: a child of its span and linked
    to it, with a span id derived from the conversation and compaction ids."""
    key = f"{ctx.conversation_id}\x00{ctx.result.compaction_id}\x00rediscovery".encode()
    trace_id = ctx.trace_id
    if len(trace_id) != 16 or not any(trace_id):
        trace_id = hashlib.blake2b(ctx.conversation_id.encode(), digest_size=16).digest()
    start = ctx.time_ns or time.time_ns()
    span = Span(
        trace_id=trace_id,
        span_id=hashlib.blake2b(key, digest_size=8).digest(),
        name=SPAN_REDISCOVERY,
        kind=Span.SpanKind.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=start,
    )
    if trace_id == ctx.trace_id and len(ctx.span_id) == 8 and any(ctx.span_id):
        span.parent_span_id = ctx.span_id
        span.links.add(trace_id=ctx.trace_id, span_id=ctx.span_id)
    attributes = rediscovery_attributes(ctx.conversation_id, ctx.result, ctx.baseline)
    span.attributes.extend(key_values(attributes))
    return span


def findings_request(
    findings: Sequence[FindingContext],
    service_name: str,
    version: str = "",
    rediscoveries: Sequence[RediscoveryContext] = (),
) -> ExportTraceServiceRequest:
    """One export request holding the finding spans of ``findings`` (and the rediscovery
    spans of ``rediscoveries``)."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(key_values({SERVICE_NAME: service_name}))
    scope_spans = resource_spans.scope_spans.add(schema_url=SCHEMA_URL)
    scope_spans.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME, version=version))
    scope_spans.spans.extend(finding_span(ctx) for ctx in findings)
    scope_spans.spans.extend(rediscovery_span(ctx) for ctx in rediscoveries)
    return request
