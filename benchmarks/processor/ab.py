"""The processor's CPU time per span, two checkouts in one sitting: a paired A/B.

    git worktree add /tmp/before <rev>
    benchmarks/run processor-ab /tmp/before,. [--rounds 10] [--conversations 20] [--passes 3]
        [--json benchmarks/results/processor_ab.json]

Each side is a checkout of this repository (``.`` is this one); the payloads and this
harness are always this tree's, so only the package differs. Every round runs one worker
process per side, in alternating order (A B, then B A, ...), and each worker feeds its
checkout's processor in one thread, the receiver's calls and nothing else: ``decode_body``
(a protobuf HTTP request), ``Pipeline.submit``, ``step`` and a send that drops the
queue's bytes, in enrich mode, with the processor's own metrics (``ProcessorMetrics``,
Prometheus reader) exactly as the service builds them. Two payloads:

* **genai**: every span a GenAI engine input (``processor_payloads`` without tool
  spans: inference spans and a compaction span every 15th turn);
* **mix15**: the same engine spans, 15% of all spans; the rest are a tool span per turn
  and HTTP client and database spans (6-8 attributes each), as an agent's trace has;
* **plain**: the mix's HTTP and database spans alone (a service without LLM calls whose
  spans go through the same Collector and processor);
* **content** (only when named in ``--payloads``): the genai payload's inference spans
  as another instrumentation writes them with content captured (the GenAI conventions'
  attributes, ``gen_ai.conversation.id``, ``gen_ai.input.messages`` with the last 20
  messages and ``gen_ai.output.messages`` with a tool call; no compaction span), the
  path that reads captured content (``otlp.content``).

A worker runs one warm-up pass, then ``--passes`` timed passes, each pass's ids new to
the processor (``processor_payloads.tagged``): the figure is CPU microseconds per span
over the timed passes. Per payload and side: the median over rounds and the spread (min,
max); per pair, the median and quartiles of the per-round differences (B minus A) and the
ratio of the medians. Rounds of both sides run within seconds of each other, so the
drift of a shared machine cancels in the paired differences.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from benchmarks._meta import ROOT, commit, now, paired, python_m
from benchmarks.processor.payloads import SPANS_PER_REQUEST, payloads, tagged
from otel_compaction import semconv as sc
from otel_compaction.otlp.attributes import key_values

PAYLOADS = ("genai", "mix15", "plain")
"""The payloads measured unless ``--payloads`` names others (``content`` too)."""
_OURS = "compaction."


# --------------------------------------------------------------------- payloads


def _filler(span: Span, n: int) -> Span:
    """A non-GenAI span of ``span``'s trace: an HTTP client call or a database query."""
    span_id = (int.from_bytes(span.span_id, "big") * 8 + n).to_bytes(8, "big")
    out = Span(trace_id=span.trace_id, span_id=span_id, parent_span_id=span.span_id,
               kind=Span.SpanKind.SPAN_KIND_CLIENT, end_time_unix_nano=span.end_time_unix_nano,
               start_time_unix_nano=span.start_time_unix_nano + n)  # fmt: skip
    if n % 2:
        out.name = "GET"
        attrs: dict[str, Any] = {
            "http.request.method": "GET", "url.full": f"https://api.example.com/items/{n}",
            "server.address": "api.example.com", "server.port": 443,
            "http.response.status_code": 200, "network.protocol.version": "1.1",
            "user_agent.original": "python-httpx/0.28.1",
        }  # fmt: skip
    else:
        out.name = "SELECT app.items"
        attrs = {
            "db.system.name": "postgresql", "db.namespace": "app",
            "db.query.text": "SELECT id, body FROM items WHERE id = $1",
            "db.operation.name": "SELECT", "db.collection.name": "items",
            "server.address": "db.internal", "server.port": 5432, "db.response.returned_rows": 1,
        }  # fmt: skip
    out.attributes.extend(key_values(attrs))
    return out


def _spans(body: bytes) -> Any:
    """The spans of a request as ``processor_payloads`` builds them (one scope)."""
    return ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans


def _requests(spans: list[Span], resource: Any) -> list[bytes]:
    out = []
    for start in range(0, len(spans), SPANS_PER_REQUEST):
        request = ExportTraceServiceRequest()
        rs = request.resource_spans.add()
        rs.resource.CopyFrom(resource)
        rs.scope_spans.add().spans.extend(spans[start : start + SPANS_PER_REQUEST])
        out.append(request.SerializeToString())
    return out


def build_payloads(conversations: int) -> dict[str, list[bytes]]:
    """The payloads: ``genai`` (engine spans only), ``mix15`` (engine spans 15%), ``plain``
    (no GenAI span)."""
    genai = payloads(conversations, tools=False)
    first = ExportTraceServiceRequest.FromString(genai[0]).resource_spans[0].resource
    mixed: list[Span] = []
    engine = 0
    for body in payloads(conversations, tools=True):
        for span in _spans(body):
            mixed.append(span)
            if span.name.startswith("execute_tool"):
                # The turn's spans so far: engine spans 15% of all (85/15 - 1 tool span each).
                want = round(engine * 85 / 15) - (len(mixed) - engine)
                mixed.extend(_filler(span, n) for n in range(1, max(want, 0) + 1))
            else:
                engine += 1
    plain = [s for s in mixed if s.name in ("GET", "SELECT app.items")]
    return {"genai": genai, "mix15": _requests(mixed, first), "plain": _requests(plain, first),
            "content": content_payload(genai)}  # fmt: skip


def content_payload(genai: list[bytes]) -> list[bytes]:
    """The ``content`` payload: ``genai``'s inference spans as the GenAI conventions write
    them with content captured (our instrumentation's attributes dropped)."""
    first = ExportTraceServiceRequest.FromString(genai[0]).resource_spans[0].resource
    spans: list[Span] = []
    for body in genai:
        for span in _spans(body):
            if not span.name.startswith("chat "):
                continue
            ours = {kv.key: kv.value for kv in span.attributes if kv.key.startswith(_OURS)}
            kept = [kv for kv in span.attributes if kv.key not in ours]
            turn, conv = ours[sc.TURN_INDEX].int_value, ours[sc.CONVERSATION_ID].string_value
            del span.attributes[:]
            span.attributes.extend(kept)
            span.attributes.extend(key_values(_content(conv, turn)))
            spans.append(span)
    return _requests(spans, first)


def _content(conv: str, turn: int) -> dict[str, Any]:
    """A turn's conversation id and captured messages: the last 20 of the history (user and
    assistant turns, tool calls and their results of 400 characters), the reply a tool call."""
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "Fix the failing test."}]}
    ]
    for n in range(max(turn - 10, 1), turn):
        history.append({"role": "assistant", "parts": [{"type": "tool_call", "id": f"t{n}",
                        "name": "read_file", "arguments": {"path": f"src/m{n}.py"}}]})  # fmt: skip
        history.append({"role": "user", "parts": [{"type": "tool_call_response", "id": f"t{n}",
                        "response": f"# module {n}\n" + "x = 1\n" * 65}]})  # fmt: skip
    reply = [{"role": "assistant", "parts": [{"type": "tool_call", "id": f"t{turn}",
              "name": "read_file", "arguments": {"path": f"src/m{turn}.py"}}]}]  # fmt: skip
    return {
        "gen_ai.conversation.id": conv,
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps(reply),
    }


def engine_share(data: list[bytes]) -> tuple[int, int]:
    """(spans, engine spans: inference and compaction) in the requests."""
    spans = engine = 0
    for body in data:
        for span in _spans(body):
            spans += 1
            engine += span.name == "compaction" or span.name.startswith("chat ")
    return spans, engine


# ----------------------------------------------------------------------- worker


def _config(tmp: Path) -> Any:
    from otel_compaction.processor.config import load_config

    return load_config(None, {
        "output": {"mode": "enrich", "log_findings": False},
        "processing": {"reorder_window_seconds": 0.0, "max_pending_items": 10**7},
        "forward": {"endpoint": "127.0.0.1:1", "queue": {"directory": str(tmp / "q"),
                    "max_batches": 10**6, "max_bytes": 10**11}},
        "detectors": {"max_conversations": 1_000_000},
    })  # fmt: skip


def run_payload(data: list[bytes], passes: int, tmp: Path) -> float:
    """CPU µs per span over ``passes`` timed passes (after one warm-up pass), one pipeline."""
    from otel_compaction.otlp.decode import PROTOBUF, Signal, decode_body
    from otel_compaction.processor.pipeline import Pipeline
    from otel_compaction.processor.queue import PersistentQueue
    from otel_compaction.processor.telemetry import ProcessorMetrics

    config = _config(tmp)
    queue = PersistentQueue(tmp / "q", max_batches=10**6, max_bytes=10**11)
    metrics = ProcessorMetrics("ab", livelocked=lambda: 0, active=lambda: 0, queue_size=lambda: 0)
    pipeline = Pipeline(config, queue=queue, metrics=metrics, findings_out=io.StringIO())
    spans = 0
    start = 0.0
    for pass_no in range(passes + 1):
        if pass_no == 1:
            spans, start = 0, time.process_time()
        for n, raw in enumerate(data):
            body = tagged(raw, pass_no + 1, n)
            request, protobuf = decode_body(Signal.TRACES, body, PROTOBUF, None, 1 << 30)
            spans += pipeline.submit(Signal.TRACES, request, "http", protobuf)
            pipeline.step()
            while (head := queue.head(timeout=0)) is not None:
                queue.remove(head[0].seq)  # the send: the bytes go nowhere
        pipeline.drain()
    elapsed = time.process_time() - start
    metrics.exposition()
    metrics.shutdown()
    return 1e6 * elapsed / spans


def worker(spec_file: Path) -> None:
    """Measure every payload with the ``otel_compaction`` first on the path; print JSON."""
    import otel_compaction

    spec = json.loads(spec_file.read_text())
    out: dict[str, Any] = {"package": str(Path(otel_compaction.__file__).parent.parent)}
    for name, hex_bodies in spec["payloads"].items():
        data = [bytes.fromhex(h) for h in hex_bodies]
        with tempfile.TemporaryDirectory(prefix="processor-ab-") as tmp:
            out[name] = run_payload(data, spec["passes"], Path(tmp))
    print(json.dumps(out))


# ------------------------------------------------------------------------- main


def run_side(tree: Path, spec_file: Path) -> dict[str, float]:
    """One worker process with ``tree``'s package first on the path."""
    command, extra = python_m("benchmarks.processor.ab", tree)
    done = subprocess.run([*command, "--worker", str(spec_file)], env={**os.environ, **extra},
                          cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{tree}: worker failed\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result.pop("package")).resolve() != tree:
        raise SystemExit(f"{tree}: the worker imported another otel_compaction")
    return result


def report(names: list[str], results: dict[str, dict[str, list[float]]]) -> list[str]:
    """Per payload: each side's median and spread, then B - A paired by round."""
    lines = []
    for payload in results[names[0]]:
        lines.append(f"{payload}: CPU µs per span, median of rounds (min … max)")
        for name in names:
            v = results[name][payload]
            lines.append(f"  {name:28s} {statistics.median(v):6.2f} ({min(v):.2f} … {max(v):.2f})")
        a, b = results[names[0]][payload], results[names[-1]][payload]
        median, q1, q3 = paired(b, a)
        ratio = statistics.median(b) / statistics.median(a)
        faster = sum(y < x for x, y in zip(a, b, strict=True))
        lines.append(f"  B - A paired: {median:+.2f} µs (IQR {q1:+.2f} … {q3:+.2f}), "
                     f"ratio of medians {ratio:.3f}, B faster in {faster}/{len(a)}")  # fmt: skip
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Build the payloads, run the rounds, print the comparison (and keep it as JSON)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sides", nargs="?", help="A,B: two checkouts (paths; . is this one)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds (default 10)")
    parser.add_argument("--conversations", type=int, default=20, help="per payload (default 20)")
    parser.add_argument("--passes", type=int, default=3, help="timed passes (default 3)")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    parser.add_argument("--payloads", default=",".join(PAYLOADS),
                        help="comma-separated (default genai,mix15,plain; or content)")  # fmt: skip
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    trees = [Path(s).expanduser().resolve() for s in (args.sides or "").split(",") if s]
    if len(trees) != 2 or not all((t / "otel_compaction").is_dir() for t in trees):
        parser.error("name two checkouts, A,B")
    names = [f"A {trees[0]}", f"B {trees[1]}"]
    wanted = args.payloads.split(",")
    data = {k: v for k, v in build_payloads(args.conversations).items() if k in wanted}
    shares = {name: engine_share(d) for name, d in data.items()}
    for name, (spans, engine) in shares.items():
        print(f"{name}: {spans} spans per pass, {engine / spans:.1%} engine spans", flush=True)
    results: dict[str, dict[str, list[float]]] = {n: {p: [] for p in data} for n in names}
    started, load = time.monotonic(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="processor-ab-") as tmp:
        spec_file = Path(tmp) / "spec.json"
        hexed = {name: [body.hex() for body in bodies] for name, bodies in data.items()}
        spec_file.write_text(json.dumps({"payloads": hexed, "passes": args.passes}))
        for round_no in range(args.rounds):
            order = [0, 1] if round_no % 2 == 0 else [1, 0]
            for i in order:
                for payload, value in run_side(trees[i], spec_file).items():
                    results[names[i]][payload].append(value)
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    lines = report(names, results)
    print("\n".join(lines))
    if args.json:
        meta = {"date": now(), "command": " ".join(["benchmarks/run processor-ab",
                *(argv or sys.argv[1:])]), "uname": " ".join(platform.uname()),
                "nproc": os.cpu_count(), "load_before": load, "load_after": os.getloadavg(),
                "wall_s": time.monotonic() - started, "payloads": shares}  # fmt: skip
        sides = {n: commit(t) for n, t in zip(names, trees, strict=True)}
        args.json.write_text(json.dumps({"meta": meta, "sides": sides, "us_per_span": results,
                                         "report": lines}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
