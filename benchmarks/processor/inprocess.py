"""The processor in one process, no network: where its CPU time goes, engine cost, memory.

Supporting figures for ``processor/throughput.py`` (which compares the running
service with the real Collector):

1. **Paths on one thread**, in CPU time, the same payloads through (a)
   ``ExportTraceServiceRequest.FromString`` alone, (b) parsing plus one Python
   read of every attribute's key, (c) parsing plus the processor's extraction
   of engine inputs, (d) the whole processor path: parse → extract → admission
   → enrich-mode write-ahead → reorder window → the shared engine → the
   processor's metrics (``ProcessorMetrics``, as the service builds them) →
   flags → queue → a send that drops the bytes; rounds interleaved, best round.
2. **Engine cost per turn**: ``ConversationAnalyzer.observe_turn`` on the
   payload's turns, CPU microseconds per call, best round.
3. **Memory per idle conversation** at 100,000 conversations (8 turns and 2
   compactions each, applied through the processor path in tap and in enrich mode),
   counted from before the pipeline is built (the de-duplication memory included):
   ``tracemalloc`` after a full collection, and the resident set of a process that
   ran no tracemalloc, divided by the count; each in a fresh process. Both after the
   processor's periodic trim (``processor.heap.release``, which an idle processor has
   run within ``processing.trim_memory_seconds``), and before it. Target: at most
   2,048 bytes in every mode by both measures.

    benchmarks/run processor-inprocess [--quick] [--no-doc] [--json FILE] [--from-json FILE]
    benchmarks/run processor-inprocess --memory-only 100000 [--json FILE]

To measure another checkout of the package, put it first on the path:
``PYTHONPATH=/tmp/before benchmarks/run processor-inprocess --no-doc``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from google.protobuf import __version__ as protobuf_version
from google.protobuf.internal import api_implementation
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks._meta import ROOT, commit, now, python_m, replace_block, results_file
from benchmarks.processor.payloads import count_spans, payloads
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import TurnObservation
from otel_compaction.otlp.decode import Signal, parse_protobuf
from otel_compaction.otlp.extract import spans_to_items
from otel_compaction.processor import heap
from otel_compaction.processor.config import ProcessorConfig, load_config
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.telemetry import ProcessorMetrics


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


def _submit(pipeline: Pipeline, body: bytes) -> None:
    """What a receiver does: hand the pipeline the request it parsed, and its bytes."""
    pipeline.submit(Signal.TRACES, parse_protobuf(Signal.TRACES, body), "http", body)


def full_path(data: list[bytes]) -> float:
    """CPU seconds through the whole processor path on one thread (fresh conversations)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp))
        queue = PersistentQueue(Path(tmp) / "q", max_batches=10**6, max_bytes=10**11)
        # The processor's own metrics, as the service builds them (the compaction metrics'
        # recording is part of the path: a histogram value per GenAI span).
        metrics = ProcessorMetrics("bench", livelocked=_zero, active=_zero, queue_size=_zero)
        pipeline = Pipeline(config, queue=queue, metrics=metrics, findings_out=io.StringIO())
        sender = NullSender()
        start = time.process_time()
        for body in data:
            _submit(pipeline, body)
            pipeline.step()
            _send_all(queue, sender)
        pipeline.drain()
        _send_all(queue, sender)
        elapsed = time.process_time() - start
        metrics.shutdown()
        return elapsed


def _zero() -> int:
    return 0


PATHS = {
    "decode_only": decode_only,
    "decode_and_read": decode_and_read,
    "decode_and_extract": decode_and_extract,
    "full_path": full_path,
}


def throughput(data: list[bytes], rounds: int) -> dict[str, dict[str, float]]:
    """Spans per CPU second of each path: the paths run in turn, ``rounds`` times; best round."""
    spans = count_spans(data)
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


MODES = ("tap", "enrich")
TARGET_BYTES = 2_048
"""Per idle conversation, in every mode and by both measures."""


def memory_per_conversation(count: int, mode: str, traced: bool) -> dict[str, Any]:
    """Memory kept per idle tracked conversation, the processor built and filled in this
    process: the Python heap (``tracemalloc``, with its 8 largest allocation sites) when
    ``traced``, else the process's resident set (``/proc/self/statm``; tracemalloc's own
    bookkeeping would inflate it).

    Each conversation gets 8 turns and 2 compactions through the processor path in
    ``mode`` (``enrich``: write-ahead to the queue, sent at once). Counted from before the
    pipeline is built, so the de-duplication memory (global, 262,144 keys by default,
    preallocated) is included, as is everything the pipeline keeps.
    """
    with tempfile.TemporaryDirectory() as tmp:
        gc.collect()
        if traced:
            tracemalloc.start()
        before = _used(traced)
        pipeline, queue = _memory_pipeline(Path(tmp), count, mode)
        sender = NullSender()
        chunk = 2_000
        for first in range(1, count + 1, chunk):
            size = min(chunk, count - first + 1)
            for body in payloads(size, turns=8, first=first, compact_every=4, tools=False):
                _submit(pipeline, body)
                pipeline.step()
                if queue is not None:
                    _send_all(queue, sender)
        pipeline.drain()
        if queue is not None:
            _send_all(queue, sender)
        gc.collect()
        untrimmed = _used(traced) - before
        # What an idle processor has done within ``processing.trim_memory_seconds``: freed
        # heap pages handed back (the resident set only; the traced heap is the same).
        heap.release()
        kept = _used(traced) - before
        top = tracemalloc.take_snapshot().statistics("lineno")[:8] if traced else []
        tracemalloc.stop()
        tracked = len(pipeline.state.registry)
    return {
        "mode": mode,
        "measure": "tracemalloc" if traced else "rss",
        "conversations": tracked,
        "bytes_per_conversation": kept / max(tracked, 1),
        "untrimmed_bytes_per_conversation": untrimmed / max(tracked, 1),
        "top": [(f"{_source(s.traceback[0].filename)}:{s.traceback[0].lineno}",
                 s.size / max(tracked, 1)) for s in top],
    }  # fmt: skip


def _used(traced: bool) -> int:
    """Bytes in use: traced heap, or resident pages."""
    if traced:
        return tracemalloc.get_traced_memory()[0]
    resident = int(Path("/proc/self/statm").read_text().split()[1])
    return resident * os.sysconf("SC_PAGE_SIZE")


def _memory_pipeline(tmp: Path, count: int, mode: str) -> tuple[Pipeline, PersistentQueue | None]:
    """A pipeline in ``mode`` with the default de-duplication memory, room for ``count``."""
    raw: dict[str, Any] = {
        "output": {"mode": mode, "log_findings": False},
        "processing": {"reorder_window_seconds": 0.0, "max_pending_items": 10**7},
        "detectors": {"max_conversations": count + 1},
    }
    if mode == "tap":
        return Pipeline(load_config(None, raw)), None
    raw["forward"] = {"endpoint": "127.0.0.1:1", "queue": {
        "directory": str(tmp / "q"), "max_batches": 10**6, "max_bytes": 10**11}}  # fmt: skip
    queue = PersistentQueue(tmp / "q", max_batches=10**6, max_bytes=10**11)
    return Pipeline(load_config(None, raw), queue=queue), queue


def memory(count: int) -> list[dict[str, Any]]:
    """Both modes, both measures, each in a fresh process (one fill per process)."""
    out = []
    for mode in MODES:
        for measure in ("tracemalloc", "rss"):
            python, _ = python_m("benchmarks.processor.inprocess")
            command = [*python, "--memory-probe", mode, measure, str(count)]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
            out.append(json.loads(done.stdout.splitlines()[-1]))
            row = out[-1]
            print(f"memory ({mode}, {measure}): {row['bytes_per_conversation']:,.0f} bytes per "
                  f"idle conversation at {row['conversations']:,}")  # fmt: skip
            for name, size in row["top"]:
                print(f"  {size:8,.0f} B/conversation  {name}")
    return out


def _source(filename: str) -> str:
    """A file's path from the package's folder on (``otel_compaction/...``), wherever it is."""
    at = filename.rfind("otel_compaction/")
    return filename[at:] if at >= 0 else filename.split("site-packages/")[-1]


# ------------------------------------------------------------------------ main


DOCS = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results" / "processor_inprocess.json"
RESULTS_SHOWN = "benchmarks/results/processor_inprocess.json"
BEGIN = "<!-- processor-inprocess:begin (generated by benchmarks/processor/inprocess.py) -->"
END = "<!-- processor-inprocess:end -->"


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
        "date": now(),
        "commit": commit(),
    }


def markdown(results: dict[str, Any]) -> str:
    """The generated part of the docs section."""
    m, tp, mem = results["machine"], results["throughput"], results["memory"]
    floor = tp["decode_only"]["spans_per_s"]
    python = tp["decode_and_read"]["spans_per_s"]
    worst = max(row["bytes_per_conversation"] for row in mem)
    memory_verdict = "met" if worst <= TARGET_BYTES else "**not met**"
    labels = {
        "decode_only": "(a) decode only (`ExportTraceServiceRequest.FromString`)",
        "decode_and_read": "(b) decode + read every attribute's key once in Python",
        "decode_and_extract": "(c) decode + extract the engine inputs",
        "full_path": "(d) full processor path (enrich, queue, engine, metrics, send)",
    }
    rows = []
    for name, label in labels.items():
        rate, worst = tp[name]["spans_per_s"], tp[name]["worst_spans_per_s"]
        of_python = "–" if name == "decode_only" else f"{rate / python:.0%}"
        rows.append(f"| {label} | {rate:,.0f} ({worst:,.0f}) | {rate / floor:.1%} "
                    f"| {of_python} |")  # fmt: skip
    figures = [
        f"| {r['mode']} | {r['measure']} | {r['bytes_per_conversation']:,.0f} | "
        + (f"{r['untrimmed_bytes_per_conversation']:,.0f} |"
           if "untrimmed_bytes_per_conversation" in r else "– |")
        for r in mem
    ]  # fmt: skip
    traced = next(r for r in mem if r["measure"] == "tracemalloc")
    holders = [f"| `{name}` | {size:,.0f} |" for name, size in traced["top"]]
    return "\n".join([
        BEGIN,
        (f"Run {m['date']} at commit {m['commit']}, `{RESULTS_SHOWN}`. " if "commit" in m else "")
        + f"Measured on {m['cpu']}, {m['cores']} cores shared with other work (load average "
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
        f"Memory per idle tracked conversation at {traced['conversations']:,} conversations, "
        "the de-duplication memory included (target 2,048 in every row: "
        f"{memory_verdict}):",
        "",
        "| mode | measure | bytes per conversation | before the periodic trim |",
        "|---|---|---|---|",
        *figures,
        "",
        f"Largest allocation sites ({traced['mode']} mode), bytes per conversation:",
        "",
        "| allocated at | bytes |",
        "|---|---|",
        *holders,
        END,
    ])  # fmt: skip


def write_docs(results: dict[str, Any]) -> None:
    """Replace the generated block of ``docs/benchmarks.md`` (it must exist)."""
    replace_block(DOCS, BEGIN, END, markdown(results))


def measure(quick: bool) -> dict[str, Any]:
    """Run every measurement, printing as it goes; the results for the docs."""
    conversations, rounds, idle = (20, 2, 5_000) if quick else (200, 5, 100_000)
    results: dict[str, Any] = {"machine": machine(), "rounds": rounds}
    data = payloads(conversations)
    spans = count_spans(data)
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
    results["memory"] = memory(idle)
    return results


def main(argv: list[str] | None = None) -> int:
    """Measure (or re-render), write the results JSON and the docs' block."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="smaller run (smoke test): temp dir, no docs"
    )
    parser.add_argument("--json", type=Path, help=f"results file (default {RESULTS_SHOWN})")
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    parser.add_argument("--from-json", type=Path, help="render these results, measure nothing")
    parser.add_argument(
        "--memory-only", type=int, metavar="N",
        help="only the memory per conversation at N conversations (both modes, both "
        "measures); prints it, writes --json if given, no docs",
    )  # fmt: skip
    parser.add_argument("--memory-probe", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_probe:
        mode, measure_, count = args.memory_probe
        print(json.dumps(memory_per_conversation(int(count), mode, measure_ == "tracemalloc")))
        return 0
    if args.memory_only:
        rows = memory(args.memory_only)
        if args.json:
            args.json.write_text(json.dumps({"machine": machine(), "memory": rows}, indent=2))
        return 0
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        if isinstance(results["memory"], dict):  # a run before both modes and measures
            results["memory"] = [{"mode": "tap", "measure": "tracemalloc", **results["memory"]}]
        for row in results["memory"]:
            row["top"] = [tuple(t) for t in row["top"]]
    else:
        results = measure(args.quick)
        path = results_file(args.json, RESULTS, scratch=args.quick or args.no_doc)
        path.write_text(json.dumps(results, indent=2))
        print(f"wrote {path}")
    if not args.no_doc and (args.from_json or not args.quick):
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
