"""Processor benchmark: throughput against a decode-only floor, engine cost, memory, latency.

    .venv/bin/python benchmarks/processor_throughput.py [--quick] [--json FILE] [--write-docs]

Four measurements, one process, loopback only:

1. **Throughput on one thread**, in CPU time (the machine may be shared: wall
   time would also count waiting for a core). The same realistic payloads
   (agent traces: per turn an inference span, a tool span and every 15th turn
   a compaction span; 60 turns per conversation, 512 spans per request, as a
   Collector's batch processor sends them) go through, round after round in
   turn, and the best round of each counts:
   (a) ``ExportTraceServiceRequest.FromString`` and nothing else, the floor
   for any Python receiver; (b) parsing plus one Python read of every
   attribute's key, the floor for any processor that looks at each attribute
   in Python; (c) parsing plus the processor's extraction of engine inputs;
   (d) the whole processor path: parse → extract → admission → enrich-mode
   write-ahead to the queue → reorder window → the shared engine → flags →
   serialize → queue → send (to a sender that drops the bytes) → delete.
   Target: (d) at least half of (a).
2. **Engine cost per turn**: ``ConversationAnalyzer.observe_turn`` on the
   payload's turns (it runs on every LLM call in the agent process too), CPU
   microseconds per call, best round.
3. **Memory per idle conversation** at 100,000 conversations, each with 8
   turns and 2 compactions applied through the processor path (tap mode),
   then idle: Python heap kept (``tracemalloc``, after a full collection)
   divided by the count. Target < 2 KiB.
4. **Added latency at half of peak load.** OTLP/HTTP requests into a running
   service (enrich mode, window 0) that forwards over OTLP/gRPC to a local
   sink; latency = arrival at the sink minus the client's send time, at half
   the closed-loop peak request rate. p50 and p99.

To compare with another version of the package, put its tree first on the
path: ``PYTHONPATH=/tmp/old .venv/bin/python benchmarks/processor_throughput.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import http.client
import inspect
import io
import json
import os
import platform
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
from google.protobuf import __version__ as protobuf_version
from google.protobuf.internal import api_implementation
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_compaction import semconv as sc
from otel_compaction.analyzer import ConversationAnalyzer
from otel_compaction.config import Settings
from otel_compaction.model import TurnObservation
from otel_compaction.processor.attributes import key_values
from otel_compaction.processor.config import ProcessorConfig, load_config
from otel_compaction.processor.decode import Signal, parse_protobuf
from otel_compaction.processor.extract import spans_to_items
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


def decode_only(data: list[bytes]) -> float:
    """CPU seconds to parse every request with protobuf and do nothing else."""
    start = time.process_time()
    for body in data:
        ExportTraceServiceRequest.FromString(body)
    return time.process_time() - start


def decode_and_read(data: list[bytes]) -> float:
    """CPU seconds when Python also reads every attribute's key once (a Python floor)."""
    start = time.process_time()
    for body in data:
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    for kv in span.attributes:
                        kv.key  # noqa: B018 — the access is what is measured
    return time.process_time() - start


def decode_and_extract(data: list[bytes]) -> float:
    """CPU seconds to parse and turn every span into engine inputs (no engine)."""
    start = time.process_time()
    for body in data:
        for _ in spans_to_items(ExportTraceServiceRequest.FromString(body), data=body):
            pass
    return time.process_time() - start


# A receiver hands the pipeline the protobuf it parsed; a tree from before
# ``submit(..., data)`` (``PYTHONPATH=/tmp/old``) serialises it again instead.
_SUBMIT_TAKES_DATA = "data" in inspect.signature(Pipeline.submit).parameters


def _submit(pipeline: Pipeline, body: bytes) -> None:
    request = parse_protobuf(Signal.TRACES, body)
    if _SUBMIT_TAKES_DATA:
        pipeline.submit(Signal.TRACES, request, "http", body)
    else:
        pipeline.submit(Signal.TRACES, request, "http")


def full_path(data: list[bytes]) -> float:
    """CPU seconds through the whole processor path on one thread (fresh conversations)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp))
        queue = PersistentQueue(Path(tmp) / "q", max_batches=10**6, max_bytes=10**11)
        pipeline = Pipeline(config, queue=queue, findings_out=io.StringIO())
        sender = NullSender()
        start = time.process_time()
        for body in data:
            _submit(pipeline, body)
            pipeline.step()
            _send_all(queue, sender)
        pipeline.drain()
        _send_all(queue, sender)
        return time.process_time() - start


PATHS = {
    "decode_only": decode_only,
    "decode_and_read": decode_and_read,
    "decode_and_extract": decode_and_extract,
    "full_path": full_path,
}


def throughput(data: list[bytes], rounds: int) -> dict[str, dict[str, float]]:
    """Spans per CPU second of each path: the paths run in turn, ``rounds`` times; best round."""
    spans = _spans(data)
    seconds: dict[str, list[float]] = {name: [] for name in PATHS}
    for _ in range(rounds):
        for name, path in PATHS.items():
            gc.collect()
            seconds[name].append(path(data))
    return {
        name: {"spans_per_s": spans / min(s), "worst_spans_per_s": spans / max(s)}
        for name, s in seconds.items()
    }


def engine_turn_cost(data: list[bytes], rounds: int) -> float:
    """CPU microseconds per ``ConversationAnalyzer.observe_turn`` on the payload's turns."""
    turns: dict[str, list[TurnObservation]] = {}
    for body in data:
        for item in spans_to_items(ExportTraceServiceRequest.FromString(body)):
            if item.turn is not None:
                turns.setdefault(item.conversation_id, []).append(item.turn)
    calls = sum(map(len, turns.values()))
    best = float("inf")
    settings = Settings.from_env()
    for _ in range(rounds):
        analyzers = [(ConversationAnalyzer(cid, settings), ts) for cid, ts in turns.items()]
        gc.collect()
        start = time.process_time()
        for analyzer, observations in analyzers:
            for observation in observations:
                analyzer.observe_turn(observation)
        best = min(best, time.process_time() - start)
    return 1e6 * best / calls


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
            _submit(pipeline, body)
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


def machine() -> dict[str, Any]:
    """Where the numbers come from: CPU, cores, load, Python and protobuf."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg()[0],
        "python": platform.python_version(),
        "protobuf": f"{protobuf_version} ({api_implementation.Type()})",
    }


def markdown(results: dict[str, Any]) -> str:
    """The generated part of the docs section."""
    m, tp, mem, lat = (
        results["machine"],
        results["throughput"],
        results["memory"],
        results["latency"],
    )
    floor = tp["decode_only"]["spans_per_s"]
    python = tp["decode_and_read"]["spans_per_s"]
    full = tp["full_path"]["spans_per_s"]
    per_conv = mem["bytes_per_conversation"]
    speed_verdict = "met" if full >= floor / 2 else "**not met**"
    memory_verdict = "met" if per_conv < 2048 else "**not met**"
    labels = {
        "decode_only": "(a) decode only (`ExportTraceServiceRequest.FromString`)",
        "decode_and_read": "(b) decode + read every attribute's key once in Python",
        "decode_and_extract": "(c) decode + extract the engine inputs",
        "full_path": "(d) full processor path (enrich, queue, engine, send)",
    }
    rows = []
    for name, label in labels.items():
        rate, worst = tp[name]["spans_per_s"], tp[name]["worst_spans_per_s"]
        verdict = f" (target 50%: {speed_verdict})" if name == "full_path" else ""
        of_python = "–" if name == "decode_only" else f"{rate / python:.0%}"
        rows.append(f"| {label} | {rate:,.0f} ({worst:,.0f}) | {rate / floor:.1%}{verdict} "
                    f"| {of_python} |")  # fmt: skip
    holders = "\n".join(f"| `{name}` | {size:,.0f} |" for name, size in mem["top"])
    return "\n".join([
        BEGIN,
        f"Measured on {m['cpu']}, {m['cores']} cores shared with other work (load average "
        f"{m['load_average']:.1f} at the start), Python {m['python']}, protobuf {m['protobuf']}; "
        f"{results['payload']['spans']:,} spans in {results['payload']['requests']} requests, "
        f"{results['payload']['bytes_per_span']:.0f} bytes per span. Rates are spans per CPU "
        f"second on one thread, best of {results['rounds']} interleaved rounds "
        "(worst in brackets).",
        "",
        "| path | spans/s | share of (a) | share of (b) |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Engine cost per turn (`ConversationAnalyzer.observe_turn`, CPU time): "
        f"**{results['engine_turn_us']:.1f} µs**.",
        "",
        f"Memory per idle tracked conversation at {mem['conversations']:,} conversations: "
        f"**{per_conv:,.0f} bytes** (target 2,048: {memory_verdict}). "
        "Largest holders, bytes per conversation:",
        "",
        "| allocated in | bytes |",
        "|---|---|",
        holders,
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


def measure(quick: bool) -> dict[str, Any]:
    """Run every measurement, printing as it goes; the results for the docs."""
    conversations, rounds, idle, seconds = (20, 2, 5_000, 2.0) if quick else (200, 5, 100_000, 8.0)
    results: dict[str, Any] = {"machine": machine(), "rounds": rounds}
    data = payloads(conversations)
    spans = _spans(data)
    results["payload"] = {"requests": len(data), "spans": spans,
                          "bytes_per_span": sum(map(len, data)) / spans}  # fmt: skip
    print(f"{results['machine']}\npayload: {len(data)} requests, {spans} spans")
    tp = results["throughput"] = throughput(data, rounds)
    floor = tp["decode_only"]["spans_per_s"]
    for name, rate in tp.items():
        print(f"{name:20s} {rate['spans_per_s']:>12,.0f} spans/s (worst round "
              f"{rate['worst_spans_per_s']:,.0f}), "
              f"{rate['spans_per_s'] / floor:.1%} of decode-only")  # fmt: skip
    results["engine_turn_us"] = engine_turn_cost(data, rounds)
    print(f"engine: {results['engine_turn_us']:.2f} µs per observe_turn")
    mem = results["memory"] = memory_per_conversation(idle)
    print(f"memory: {mem['bytes_per_conversation']:,.0f} bytes per idle conversation "
          f"at {mem['conversations']:,} (target < 2048)")  # fmt: skip
    for name, size in mem["top"]:
        print(f"  {size:8,.0f} B/conversation  {name}")
    lat = results["latency"] = latency(data, seconds)
    print(f"latency at {lat['rate_requests_per_s']:.0f} req/s (half of peak "
          f"{lat['peak_spans_per_s']:,.0f} spans/s over HTTP): p50 {lat['p50_ms']:.1f} ms, "
          f"p99 {lat['p99_ms']:.1f} ms over {lat['requests']} requests")  # fmt: skip
    return results


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
    else:
        results = measure(args.quick)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    if args.write_docs and not (args.quick and not args.from_json):
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
