"""The processor benchmarks' payloads: agent traces as a shared Collector batches them.

Per turn an inference span (about 22 attributes, as our instrumentation writes
them), a tool span, and every 15th turn a compaction span; conversations
interleaved, 512 spans per request, about 590 bytes per span.

Two placeholders let one set of requests be sent many times as new data
(``bytes.replace``, same length, so the protobuf stays valid):
``PASS_TAG`` is in every conversation id and ends every trace id, so each pass
over the requests is a new set of conversations to the processor (no span is a
duplicate, no turn late; the tag's digits sit in the trace id's last 8 bytes,
so even a key reading only those would tell passes apart); ``REQUEST_TAG`` is
a resource attribute, so a sink can tell which request a span came in (the
Collector's batch processor merges requests but keeps each resource).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_compaction import semconv as sc
from otel_compaction.otlp.attributes import key_values

PASS_TAG = b"#R000000#"
REQUEST_TAG = b"#Q000000#"
REQUEST_ATTRIBUTE = "bench.request"

MODEL = "claude-sonnet-4-5"
TURNS = 60
SPANS_PER_REQUEST = 512


# --------------------------------------------------------------------- payloads


def _conversation_spans(
    conv: int, turns: int, compact_every: int = 15, tools: bool = True
) -> Iterator[Span]:
    trace = conv.to_bytes(16 - len(PASS_TAG), "big") + PASS_TAG
    context = 20_000
    for turn in range(1, turns + 1):
        t = 1_794_528_000_000_000_000 + turn * 10_000_000_000
        if turn % compact_every == 0:
            yield _span(trace, conv, turn, 0, sc.SPAN_COMPACTION, t, {
                sc.COMPACTION_ID: f"c{conv}-{turn}", sc.COMPACTION_SOURCE: "explicit",
                sc.COMPACTION_MODE: "lossy", sc.COMPACTION_TRIGGER: "auto",
                sc.TOKENS_BEFORE: context, sc.TOKENS_AFTER: 40_000,
                sc.LINEAGE_GENERATION: 0, sc.FLAG_REASON: "", sc.PHASE_NAME: "patch",
                sc.PHASE_SOURCE: "inferred", sc.PHASE_CONFIDENCE: 0.7,
            })  # fmt: skip
            context = 40_000
        context += 6_000
        yield _span(trace, conv, turn, 1, f"chat {MODEL}", t + 1, {
            sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_PROVIDER_NAME: "anthropic",
            sc.GEN_AI_REQUEST_MODEL: MODEL, sc.GEN_AI_RESPONSE_MODEL: MODEL,
            sc.GEN_AI_USAGE_INPUT_TOKENS: context, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 500,
            sc.CONTEXT_TOKENS: context, sc.CONTEXT_WINDOW: 200_000,
            sc.CONTEXT_NEW_CONTENT_TOKENS: 6_000, sc.PRESSURE_TOKEN_FRACTION: context / 2e5,
            sc.PRESSURE_ATTENTION_DECAY: 0.02, sc.PHASE_NAME: "explore",
            sc.PHASE_CONFIDENCE: 0.8, sc.PHASE_ENTROPY: 0.4,
            sc.PHASE_TRANSITION_LIKELIHOOD: 0.1, sc.PHASE_SOURCE: "inferred",
            sc.TOOL_CALLS: ["read_file"], sc.TOOL_OUTPUT_TOKENS: [2_000],
            "server.address": "api.anthropic.com", "gen_ai.response.id": f"msg_{conv}_{turn}",
        })  # fmt: skip
        if not tools:
            continue
        yield _span(trace, conv, turn, 2, "execute_tool read_file", t + 2, {
            sc.GEN_AI_OPERATION_NAME: "execute_tool", "gen_ai.tool.name": "read_file",
        })  # fmt: skip


def _span(
    trace: bytes, conv: int, turn: int, n: int, name: str, t: int, attrs: dict[str, Any]
) -> Span:
    span = Span(
        trace_id=trace,
        span_id=((conv * 1000 + turn) * 4 + n).to_bytes(8, "big"),
        name=name,
        kind=Span.SpanKind.SPAN_KIND_CLIENT,
        start_time_unix_nano=t,
        end_time_unix_nano=t + 5_000_000,
    )
    if n < 2 or sc.GEN_AI_OPERATION_NAME in attrs:
        conversation = f"conv-{conv:07d}{PASS_TAG.decode()}"
        attrs = {sc.CONVERSATION_ID: conversation, sc.TURN_INDEX: turn, **attrs}
    span.attributes.extend(key_values(attrs))
    return span


def payloads(
    conversations: int, turns: int = TURNS, first: int = 1, compact_every: int = 15,
    tools: bool = True,
) -> list[bytes]:  # fmt: skip
    """Serialized requests, interleaving conversations the way a shared Collector does."""
    streams = [
        list(_conversation_spans(first + c, turns, compact_every, tools))
        for c in range(conversations)
    ]
    spans = [s for group in zip(*streams, strict=False) for s in group]
    out = []
    for start in range(0, len(spans), SPANS_PER_REQUEST):
        request = ExportTraceServiceRequest()
        rs = request.resource_spans.add()
        resource = {"service.name": "agent", REQUEST_ATTRIBUTE: REQUEST_TAG.decode()}
        rs.resource.attributes.extend(key_values(resource))
        rs.scope_spans.add().spans.extend(spans[start : start + SPANS_PER_REQUEST])
        out.append(request.SerializeToString())
    return out


def tagged(body: bytes, pass_no: int, request_no: int) -> bytes:
    """``body`` as pass ``pass_no``'s copy, request ``request_no`` (both below 10**6)."""
    body = body.replace(PASS_TAG, b"#R%06d#" % pass_no)
    return body.replace(REQUEST_TAG, b"#Q%06d#" % request_no)


def count_spans(data: list[bytes]) -> int:
    """How many spans the requests hold."""
    return sum(
        len(ExportTraceServiceRequest.FromString(b).resource_spans[0].scope_spans[0].spans)
        for b in data
    )
