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

Two payloads:

- ``payloads``, **all GenAI**: every span is one of the agent's (inference, tool,
  compaction), the processor's worst case, where it reads every span;
- ``mixed_payloads``, **a realistic mix**: the same agent conversations in a shared
  Collector's traffic where 15% of the spans are GenAI (``GENAI_SHARE``) and the rest
  are the ordinary spans of another service (``shop-api``, its own resource in each
  request): traces of 8 spans, an HTTP server span (``GET /api/orders/{id}``), five
  PostgreSQL client spans (``db.system.name``, ``db.operation.name``, ``db.query.text``)
  and two HTTP client calls, 8-10 attributes each, as HTTP and database
  instrumentations write them. After each GenAI span of a conversation come as many
  ordinary spans as keep the GenAI share at 15% (cumulatively), so every request
  holds about that share; their trace ids end with the pass tag too.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
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
GENAI_SHARE = 0.15
AGENT, OTHER = "agent", "shop-api"


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
    """Serialized all-GenAI requests, interleaving conversations the way a shared Collector
    does."""
    streams = [
        [(AGENT, s) for s in _conversation_spans(first + c, turns, compact_every, tools)]
        for c in range(conversations)
    ]
    return _requests(streams)


def mixed_payloads(conversations: int, turns: int = TURNS, first: int = 1) -> list[bytes]:
    """Serialized requests of the realistic mix: the conversations of ``payloads`` among
    ordinary spans, GenAI ``GENAI_SHARE`` of them (the module's docstring)."""
    return _requests([list(_mixed(first + c, turns)) for c in range(conversations)])


def _mixed(conv: int, turns: int) -> Iterator[tuple[str, Span]]:
    """A conversation's spans, each followed by ordinary ones up to the mix's share."""
    ordinary = _ordinary_spans(conv)
    others = 0
    for genai, span in enumerate(_conversation_spans(conv, turns), start=1):
        yield AGENT, span
        due = int(genai * (1 - GENAI_SHARE) / GENAI_SHARE) - others
        others += due
        yield from ((OTHER, s) for s in itertools.islice(ordinary, due))


def _ordinary_spans(conv: int) -> Iterator[Span]:
    """Endless traces of another service beside conversation ``conv``: an HTTP request that
    reads five rows and calls two services (8 spans each)."""
    for k in itertools.count():
        prefix = (1 << 55) | (conv << 24) | k  # never a conversation's trace id
        trace = prefix.to_bytes(16 - len(PASS_TAG), "big") + PASS_TAG
        t = 1_794_528_000_000_000_000 + k * 1_000_000_000
        root = _plain(trace, 1, b"", "GET /api/orders/{id}", Span.SpanKind.SPAN_KIND_SERVER, t, {
            "http.request.method": "GET", "http.route": "/api/orders/{id}",
            "url.path": f"/api/orders/{conv * 1000 + k % 1000}", "url.scheme": "https",
            "http.response.status_code": 200, "server.address": "shop.example.com",
            "server.port": 443, "network.protocol.version": "1.1",
            "client.address": "10.1.2.3", "user_agent.original": "Mozilla/5.0 (X11; Linux)",
        })  # fmt: skip
        yield root
        for n in range(2, 7):
            yield _plain(trace, n, root.span_id, "SELECT shop.orders",
                         Span.SpanKind.SPAN_KIND_CLIENT, t + n * 100_000, {
                "db.system.name": "postgresql", "db.namespace": "shop",
                "db.operation.name": "SELECT", "db.collection.name": "orders",
                "db.query.text": "SELECT id, status, total FROM orders WHERE id = $1",
                "server.address": "db.internal", "server.port": 5432,
                "db.response.returned_rows": 1,
            })  # fmt: skip
        for n in (7, 8):
            yield _plain(trace, n, root.span_id, "GET", Span.SpanKind.SPAN_KIND_CLIENT,
                         t + n * 100_000, {
                "http.request.method": "GET", "url.full": "http://inventory:8080/stock/42",
                "server.address": "inventory", "server.port": 8080,
                "http.response.status_code": 200, "network.protocol.version": "1.1",
            })  # fmt: skip


def _plain(trace: bytes, n: int, parent: bytes, name: str, kind: Any, t: int,
           attrs: dict[str, Any]) -> Span:  # fmt: skip
    span = Span(trace_id=trace, span_id=n.to_bytes(8, "big"), parent_span_id=parent, name=name,
                kind=kind, start_time_unix_nano=t, end_time_unix_nano=t + 2_000_000)  # fmt: skip
    span.attributes.extend(key_values(attrs))
    return span


def _requests(streams: list[list[tuple[str, Span]]]) -> list[bytes]:
    """Streams interleaved one span each, cut into requests of ``SPANS_PER_REQUEST`` spans, one
    resource per service in each."""
    spans = [s for group in itertools.zip_longest(*streams) for s in group if s is not None]
    out = []
    for start in range(0, len(spans), SPANS_PER_REQUEST):
        request = ExportTraceServiceRequest()
        by_service: dict[str, list[Span]] = {}
        for service, span in spans[start : start + SPANS_PER_REQUEST]:
            by_service.setdefault(service, []).append(span)
        for service, group in by_service.items():
            rs = request.resource_spans.add()
            resource = {"service.name": service, REQUEST_ATTRIBUTE: REQUEST_TAG.decode()}
            rs.resource.attributes.extend(key_values(resource))
            rs.scope_spans.add().spans.extend(group)
        out.append(request.SerializeToString())
    return out


def tagged(body: bytes, pass_no: int, request_no: int) -> bytes:
    """``body`` as pass ``pass_no``'s copy, request ``request_no`` (both below 10**6)."""
    body = body.replace(PASS_TAG, b"#R%06d#" % pass_no)
    return body.replace(REQUEST_TAG, b"#Q%06d#" % request_no)


def count_spans(data: Iterable[bytes]) -> int:
    """How many spans the requests hold."""
    return sum(
        len(ss.spans)
        for b in data
        for rs in ExportTraceServiceRequest.FromString(b).resource_spans
        for ss in rs.scope_spans
    )
