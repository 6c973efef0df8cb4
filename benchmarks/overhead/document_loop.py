"""The document loop: one document per request, the same system prompt, one thread.

A RAG or batch-document application (not an agent) sends each document in a request of its
own. Every such request has the shape of a whole-history replacement (nothing but user text
never sent before), so ours measures how much of it the thread's recent conversations carry
(``otel_compaction.inference.carry``); this benchmark times what that costs per call, ours
against the anthropic SDK alone, at 100 kB, 400 kB and 1 MB documents::

    benchmarks/run document-loop                  # ~3 min: 3 passes, 12 timed calls per size
    benchmarks/run document-loop --quick          # ~30 s smoke run, results to the temp dir

One process per configuration (``plain``: the SDK alone; ``ours``) per pass, the passes
interleaved. Each process makes 9 untimed calls (the thread's 8 recent conversations and
one more), then the timed calls, each a new document; a ``gc.collect()`` before each call.
Per call: CPU time of the process, wall time, and own time (wall time outside the SDK's
``create``, ``clock``). Added = median(ours) - median(plain), pooled over passes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, commit, now, python_m, results_file
from benchmarks.overhead.clock import InnerClock

SIZES = (100_000, 400_000, 1_000_000)
CONFIGS = ("plain", "ours")
RESULTS = ROOT / "benchmarks" / "results" / "document_loop.json"
SYSTEM = "You answer questions about the document the user sends. Quote it where you can."
MODEL = "claude-sonnet-4-6"
WARMUP = 9
"""Untimed calls first: the thread's 8 recent conversations (``history.RECENT_PLACED``) and one."""
_VOCABULARY = [f"term{n}" for n in range(20_000)]


def document(seed: int, chars: int) -> str:
    """A document of about ``chars`` characters of words, its own for every seed."""
    rng = random.Random(seed)
    lines = [f"Document {seed}."]
    size = len(lines[0])
    while size < chars:
        line = " ".join(rng.choices(_VOCABULARY, k=12)) + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def worker(config: str, size: int, calls: int, seed: int) -> dict[str, Any]:
    """One configuration in this process: ``WARMUP`` untimed calls, then ``calls`` timed."""
    import anthropic
    import httpx2
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    from benchmarks.overhead.history import canned_handler

    clock = InnerClock()
    clock.install()
    if config == "ours":
        from otel_compaction import CompactionInstrumentor

        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        CompactionInstrumentor().instrument(
            tracer_provider=TracerProvider(), meter_provider=meter_provider
        )
    transport = httpx2.MockTransport(canned_handler("anthropic"))
    client = anthropic.Anthropic(
        api_key="bench", http_client=httpx2.Client(transport=transport), max_retries=0
    )
    documents = [document(seed + n, size) for n in range(WARMUP + calls)]
    cpu, wall, own = [], [], []
    for n, text in enumerate(documents):
        messages: list[Any] = [{"role": "user", "content": text}]
        gc.collect()
        clock.inner_ns = 0
        started, started_cpu = time.perf_counter_ns(), time.process_time_ns()
        client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM, messages=messages)
        took, took_cpu = time.perf_counter_ns() - started, time.process_time_ns() - started_cpu
        if n >= WARMUP:
            cpu.append(took_cpu / 1e6)
            wall.append(took / 1e6)
            own.append((took - clock.inner_ns) / 1e6)
    import otel_compaction

    package = str(Path(otel_compaction.__file__).resolve().parent)
    result = {"config": config, "size": size, "package_path": package}
    return {**result, "cpu_ms": cpu, "wall_ms": wall, "own_ms": own}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every pass: each configuration at each size in its own process, in a shuffled order."""
    rng = random.Random(args.seed)
    results: list[dict[str, Any]] = []
    units = [(config, size) for config in CONFIGS for size in args.sizes]
    for pass_no in range(args.passes):
        rng.shuffle(units)
        for config, size in units:
            argv = [*python_m("benchmarks.overhead.document_loop")[0], "--worker", config]
            argv += [str(size), str(args.calls)]
            argv.append(str(args.seed + 1_000 * pass_no))
            done = subprocess.run(
                argv, cwd=ROOT, capture_output=True, text=True, timeout=1_800, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"{config} at {size} failed:\n{done.stderr[-2_000:]}")
            result = json.loads(done.stdout)
            results.append({**result, "pass": pass_no})
            print(f"pass {pass_no + 1}/{args.passes} {config:5} {size:>9,} B  ok", flush=True)
    return {"runs": results, "summary": summarize(results, args.sizes)}


def summarize(results: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """Per size: the medians of ours and of the SDK alone, pooled over passes, and added."""
    rows = []
    for size in sizes:
        row: dict[str, Any] = {"size": size}
        for clock in ("cpu_ms", "wall_ms", "own_ms"):
            for config in CONFIGS:
                pooled = [t for r in results if r["config"] == config and r["size"] == size
                          for t in r[clock]]  # fmt: skip
                row[f"{config}_{clock}"] = statistics.median(pooled) if pooled else None
        plain, ours = row["plain_cpu_ms"], row["ours_cpu_ms"]
        row["added_cpu_ms"] = None if plain is None or ours is None else ours - plain
        own_plain, own_ours = row["plain_own_ms"], row["ours_own_ms"]
        row["own_added_ms"] = None if own_plain is None else own_ours - own_plain
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of ``rows``."""
    head = "| document | SDK alone, CPU ms | ours, CPU ms | added CPU ms | ours' own time ms |"
    lines = [head, "|---|---|---|---|---|"]
    for row in rows:
        cells = [row["plain_cpu_ms"], row["ours_cpu_ms"], row["added_cpu_ms"], row["own_added_ms"]]
        shown = " | ".join("-" if c is None else f"{c:.1f}" for c in cells)
        lines.append(f"| {row['size'] / 1000:,.0f} kB | {shown} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--worker`` is the per-process entry the run itself uses)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 pass, 4 calls, temp dir")
    parser.add_argument("--passes", type=int, help="interleaved passes (default 3, quick 1)")
    parser.add_argument("--calls", type=int, help="timed calls per process (default 12, quick 4)")
    parser.add_argument("--sizes", help="comma-separated document sizes in bytes")
    parser.add_argument("--json", type=Path, help=f"results file (default {RESULTS.name})")
    parser.add_argument("--seed", type=int, default=2033)
    parser.add_argument("--worker", nargs=4, metavar=("CONFIG", "SIZE", "CALLS", "SEED"))
    args = parser.parse_args(argv)
    args.passes = args.passes or (1 if args.quick else 3)
    args.calls = args.calls or (4 if args.quick else 12)
    args.sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    args.json = results_file(args.json, RESULTS, args.quick)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the passes, write the results, print the table."""
    args = parse_args(argv)
    if args.worker:
        config, size, calls, seed = args.worker
        print(json.dumps(worker(config, int(size), int(calls), int(seed))))
        return 0
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.monotonic()
    results = run(args)
    meta = {"date": now(), "commit": commit(), "nproc": os.cpu_count(), "passes": args.passes}
    meta.update(calls=args.calls, load_before=load_before, wall_s=time.monotonic() - started)
    meta["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"meta": meta, **results}, indent=1))
    print(table(results["summary"]))
    print(f"load {meta['load_before']} -> {meta['load_after']}; wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
