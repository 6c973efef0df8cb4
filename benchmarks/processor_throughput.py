"""Processor benchmark: throughput against a decode-only floor, memory, added latency.

    .venv/bin/python benchmarks/processor_throughput.py [--quick] [--json FILE]

Three measurements, one process, loopback only:

1. **Throughput on one core.** The same realistic payloads (agent traces: per
   turn an inference span, a tool span and sometimes a compaction span, 60
   turns per conversation, 512 spans per request, as a Collector's batch
   processor sends them) go through (a) ``ExportTraceServiceRequest.FromString``
   and nothing else, the floor for any Python receiver, and (b) the whole
   processor path on one thread: parse → extract → admission → enrich-mode
   write-ahead to the queue → reorder window → the shared engine → flags →
   serialize → queue → send (to a sender that drops the bytes) → delete.
   Target: (b) at least half of (a).
2. **Memory per idle conversation** at 100,000 conversations, each with 12
   turns and a compaction applied through the processor path, then idle:
   growth of the process's resident set divided by the count. Target < 2 KiB.
3. **Added latency at half of peak load.** OTLP/HTTP requests into a running
   service (enrich mode, window 0) that forwards over OTLP/gRPC to a local
   sink; latency = arrival at the sink minus the client's send time, at half
   the closed-loop peak request rate. p50 and p99.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import io
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_compaction import semconv as sc
from otel_compaction.processor.attributes import key_values
from otel_compaction.processor.config import ProcessorConfig, load_config
from otel_compaction.processor.decode import Signal, parse_protobuf
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.service import ProcessorService

MODEL = "claude-sonnet-4-5"
TURNS = 60
SPANS_PER_REQUEST = 512


# --------------------------------------------------------------------- payloads


def _conversation_spans(
    conv: int, turns: int, compact_every: int = 15, tools: bool = True
) -> Iterator[Span]:
    trace = conv.to_bytes(16, "big")
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
        attrs = {sc.CONVERSATION_ID: f"conv-{conv}", sc.TURN_INDEX: turn, **attrs}
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
        rs.resource.attributes.extend(key_values({"service.name": "agent"}))
        rs.scope_spans.add().spans.extend(spans[start : start + SPANS_PER_REQUEST])
        out.append(request.SerializeToString())
    return out


def _spans(data: list[bytes]) -> int:
    return sum(
        len(ExportTraceServiceRequest.FromString(b).resource_spans[0].scope_spans[0].spans)
        for b in data
    )


# ------------------------------------------------------------------ throughput


class NullSender:
    """A next hop that takes everything instantly."""

    def send(self, signal: Signal, data: bytes) -> Any:
        from otel_compaction.processor.forward import Outcome, SendResult

        return SendResult(Outcome.SENT)

    def close(self) -> None:
        """Nothing to close."""


def _config(tmp: Path, **processing: Any) -> ProcessorConfig:
    return load_config(None, {
        "output": {"mode": "enrich", "log_findings": False},
        "processing": {"reorder_window_seconds": 0.0, "max_pending_items": 10**7, **processing},
        "forward": {"endpoint": "127.0.0.1:1", "queue": {"directory": str(tmp / "q"),
                    "max_batches": 10**6, "max_bytes": 10**11}},
        "detectors": {"max_conversations": 1_000_000},
    })  # fmt: skip


def decode_only(data: list[bytes], rounds: int) -> float:
    """Spans per second through protobuf parsing alone."""
    n = _spans(data) * rounds
    start = time.perf_counter()
    for _ in range(rounds):
        for body in data:
            ExportTraceServiceRequest.FromString(body)
    return n / (time.perf_counter() - start)


def decode_and_read(data: list[bytes], rounds: int) -> float:
    """Spans per second when Python also reads every attribute once (a Python floor)."""
    n = _spans(data) * rounds
    start = time.perf_counter()
    for _ in range(rounds):
        for body in data:
            for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        for kv in span.attributes:
                            kv.key  # noqa: B018 — the access is what is measured
    return n / (time.perf_counter() - start)


def full_path(data: list[bytes], rounds: int) -> float:
    """Spans per second through the whole processor path on one thread."""
    n = _spans(data) * rounds
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp))
        queue = PersistentQueue(Path(tmp) / "q", max_batches=10**6, max_bytes=10**11)
        pipeline = Pipeline(config, queue=queue, findings_out=io.StringIO())
        sender = NullSender()
        start = time.perf_counter()
        for r in range(rounds):
            if r:  # a new set of conversations each round (no duplicates)
                pipeline = Pipeline(config, queue=queue, findings_out=io.StringIO())
            for body in data:
                pipeline.submit(Signal.TRACES, parse_protobuf(Signal.TRACES, body), "http")
                pipeline.step()
                _send_all(queue, sender)
        pipeline.drain()
        _send_all(queue, sender)
        return n / (time.perf_counter() - start)


def _send_all(queue: PersistentQueue, sender: NullSender) -> None:
    while (head := queue.head(timeout=0)) is not None:
        entry, body = head
        sender.send(entry.signal, body)
        queue.remove(entry.seq)


# ---------------------------------------------------------------------- memory


def memory_per_conversation(count: int) -> dict[str, Any]:
    """Python heap (tracemalloc) kept per idle tracked conversation, and its largest holders.

    Each conversation gets 8 turns and 2 compactions through the processor path
    (tap mode, no dedupe memory: that one is global and bounded separately).
    """
    config = load_config(None, {
        "output": {"log_findings": False},
        "processing": {"reorder_window_seconds": 0.0, "dedupe_memory": 0},
        "detectors": {"max_conversations": count + 1},
    })  # fmt: skip
    pipeline = Pipeline(config)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    chunk = 2_000
    for first in range(1, count + 1, chunk):
        size = min(chunk, count - first + 1)
        for body in payloads(size, turns=8, first=first, compact_every=4, tools=False):
            pipeline.submit(Signal.TRACES, parse_protobuf(Signal.TRACES, body), "http")
            pipeline.step()
    pipeline.drain()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    top = tracemalloc.take_snapshot().statistics("filename")[:6]
    tracemalloc.stop()
    tracked = len(pipeline.state.registry)
    return {
        "conversations": tracked,
        "bytes_per_conversation": kept / max(tracked, 1),
        "top": [(str(s.traceback[0].filename).split("site-packages/")[-1].split("main/")[-1],
                 s.size / max(tracked, 1)) for s in top],
    }  # fmt: skip


# --------------------------------------------------------------------- latency


class Sink:
    """An OTLP/gRPC next hop that notes when each span id arrives."""

    def __init__(self) -> None:
        self.arrivals: dict[bytes, float] = {}
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.unary_unary_rpc_method_handler(
            self._export,
            request_deserializer=ExportTraceServiceRequest.FromString,
            response_serializer=ExportTraceServiceResponse.SerializeToString,
        )
        self.server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(Signal.TRACES.spec.service, {"Export": handler})]
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _export(self, request: Any, _context: Any) -> Any:
        now = time.perf_counter()
        for span in request.resource_spans[0].scope_spans[0].spans:
            self.arrivals[span.span_id] = now
        return ExportTraceServiceResponse()


def latency(data: list[bytes], seconds: float) -> dict[str, float]:
    """Closed-loop peak request rate, then p50/p99 of send → next-hop arrival at half of it."""
    sink = Sink()
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(None, {
            "receivers": {"otlp_grpc": None, "otlp_http": "127.0.0.1:0"},
            "metrics": {"endpoint": None},
            "output": {"mode": "enrich", "log_findings": False},
            "processing": {"reorder_window_seconds": 0.0, "tick_seconds": 0.002},
            "forward": {"endpoint": f"127.0.0.1:{sink.port}", "queue": {"directory": tmp}},
        })  # fmt: skip
        service = ProcessorService(config)
        service.start()
        try:
            assert service.http is not None
            conn = http.client.HTTPConnection("127.0.0.1", service.http.port)
            peak = _closed_loop(conn, data, seconds)
            samples = _paced(conn, data, seconds, peak / 2, sink)
        finally:
            service.stop()
            sink.server.stop(0)
    samples.sort()
    return {
        "peak_requests_per_s": peak,
        "peak_spans_per_s": peak * SPANS_PER_REQUEST,
        "rate_requests_per_s": peak / 2,
        "p50_ms": 1000 * statistics.median(samples),
        "p99_ms": 1000 * samples[int(0.99 * (len(samples) - 1))],
        "requests": len(samples),
    }


def _post(conn: http.client.HTTPConnection, body: bytes) -> None:
    conn.request(
        "POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"}
    )
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}")


def _closed_loop(conn: http.client.HTTPConnection, data: list[bytes], seconds: float) -> float:
    sent, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _post(conn, data[sent % len(data)])
        sent += 1
    return sent / (time.perf_counter() - start)


def _paced(
    conn: http.client.HTTPConnection, data: list[bytes], seconds: float, rate: float, sink: Sink
) -> list[float]:
    fresh = payloads(max(1, int(rate * seconds * SPANS_PER_REQUEST / (3 * TURNS)) + 1), first=10**6)
    sent_at: list[tuple[bytes, float]] = []
    start = time.perf_counter()
    for i, body in enumerate(fresh[: int(rate * seconds)]):
        target = start + i / rate
        while time.perf_counter() < target:
            time.sleep(max(0.0, min(0.001, target - time.perf_counter())))
        first_id = (
            ExportTraceServiceRequest.FromString(body)
            .resource_spans[0]
            .scope_spans[0]
            .spans[-1]
            .span_id
        )
        sent_at.append((first_id, time.perf_counter()))
        _post(conn, body)
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline and any(k not in sink.arrivals for k, _ in sent_at):
        time.sleep(0.01)
    return [sink.arrivals[k] - t for k, t in sent_at if k in sink.arrivals]


# ------------------------------------------------------------------------ main


DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN = "<!-- processor-throughput:begin (generated by benchmarks/processor_throughput.py) -->"
END = "<!-- processor-throughput:end -->"


def markdown(results: dict[str, Any]) -> str:
    """The generated part of the docs section."""
    mem, lat = results["memory"], results["latency"]
    floor = results["decode_only_spans_per_s"]
    python = results["python_floor_spans_per_s"]
    full = results["full_path_spans_per_s"]
    per_conv = mem["bytes_per_conversation"]
    speed_verdict = "met" if full >= floor / 2 else "**not met**"
    memory_verdict = "met" if per_conv < 2048 else "**not met**"
    rows = "\n".join(f"| `{name}` | {size:,.0f} |" for name, size in mem["top"])
    return "\n".join([
        BEGIN,
        "| path (spans/s, one thread) | rate | share of decode-only |",
        "|---|---|---|",
        f"| decode-only (`ExportTraceServiceRequest.FromString`) | {floor:,.0f} | 100% |",
        f"| decode + read every attribute once in Python | {python:,.0f} | {python / floor:.0%} |",
        f"| full processor path (enrich, queue, send) | {full:,.0f} | {full / floor:.1%} "
        f"(target 50%: {speed_verdict}) |",
        "",
        f"Memory per idle tracked conversation at {mem['conversations']:,} conversations: "
        f"**{per_conv:,.0f} bytes** (target 2,048: {memory_verdict}). "
        "Largest holders, bytes per conversation:",
        "",
        "| allocated in | bytes |",
        "|---|---|",
        rows,
        "",
        f"Added latency at half of the HTTP peak ({lat['peak_spans_per_s']:,.0f} spans/s, so "
        f"{lat['rate_requests_per_s']:.0f} requests of {SPANS_PER_REQUEST} spans per second): "
        f"p50 **{lat['p50_ms']:.1f} ms**, p99 **{lat['p99_ms']:.1f} ms** "
        f"over {lat['requests']} requests.",
        END,
    ])  # fmt: skip


def write_docs(results: dict[str, Any]) -> None:
    """Replace the generated block of ``docs/benchmarks.md`` (it must exist)."""
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    DOCS.write_text(text[:start] + markdown(results) + text[end:], encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run (smoke test)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--from-json", type=Path, help="skip measuring; use these results")
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        results["memory"]["top"] = [tuple(t) for t in results["memory"]["top"]]
        if args.write_docs:
            write_docs(results)
        return 0
    conversations, rounds, idle, seconds = (
        (20, 1, 5_000, 2.0) if args.quick else (200, 3, 100_000, 8.0)
    )
    data = payloads(conversations)
    spans = _spans(data)
    print(f"payload: {len(data)} requests, {spans} spans, "
          f"{sum(map(len, data)) / spans:.0f} bytes/span")  # fmt: skip
    floor = decode_only(data, rounds * 3)
    python_floor = decode_and_read(data, rounds)
    full = full_path(data, rounds)
    print(f"decode-only: {floor:,.0f} spans/s")
    print(f"decode + read every attribute in Python: {python_floor:,.0f} spans/s")
    print(f"full path:   {full:,.0f} spans/s ({full / floor:.1%} of decode-only; target >= 50%)")
    mem = memory_per_conversation(idle)
    print(f"memory: {mem['bytes_per_conversation']:,.0f} bytes per idle conversation "
          f"at {mem['conversations']:,} (target < 2048)")  # fmt: skip
    for name, size in mem["top"]:
        print(f"  {size:8,.0f} B/conversation  {name}")
    lat = latency(data, seconds)
    print(f"latency at {lat['rate_requests_per_s']:.0f} req/s (half of peak "
          f"{lat['peak_spans_per_s']:,.0f} spans/s over HTTP): p50 {lat['p50_ms']:.1f} ms, "
          f"p99 {lat['p99_ms']:.1f} ms over {lat['requests']} requests")  # fmt: skip
    results = {"decode_only_spans_per_s": floor, "python_floor_spans_per_s": python_floor,
               "full_path_spans_per_s": full,
               "ratio": full / floor, "memory": mem, "latency": lat}  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.write_docs and not args.quick:
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
