"""Processor throughput and latency against the real OpenTelemetry Collector, one core each.

    benchmarks/run processor [--quick] [--no-doc] [--json FILE] [--from-json FILE] [--profile]
    benchmarks/run processor --install-phoenix

Two payloads (``processor_payloads.py``, 512 spans per request): **all-GenAI**
(agent traces only) and **the realistic mix** (15% GenAI spans, the rest HTTP and
database spans of another service), over OTLP/gRPC through, one system at a
time, each pinned to core 0 (``taskset -c 0``) and started afresh for every run
(``processor_systems.py``):

(A) the real Collector as an OTLP-to-OTLP pass-through (otlp → batch → otlp_grpc);
(G) the Collector with ``groupbytrace`` (wait 2 s) before ``batch``;
(T) the Collector with ``tail_sampling`` (``always_sample``, decision wait 2 s)
    before ``batch``: G and T are the stateful trace components a fleet already runs;
(B) our processor as shipped for enrich mode: OTLP/gRPC receiver, write-ahead
    queue, reorder window (2 s), the engine, flags, OTLP/gRPC forward of every
    span to the same sink;
(C) the load-balancing Collector, the tier in front of our replicas (all-GenAI only);
(P) Arize Phoenix, when installed: once, bounded (``processor_phoenix.py``);

and, for reference, (D) the processor's path run in this process on one
thread without network or threads (``processor_inprocess.full_path``), on the
same core, in CPU time.

The load and the sink run on core 1 (``otlp_harness.py``). Rounds interleave
the payloads and systems in one sitting; each run reports:

- **peak**: a fixed number of requests (256) sent in a closed loop (8 requests in
  flight, refused ones sent again); spans per wall second on the pinned core and
  per CPU second of the system, from the first send until the sink has every span
  (after one unmeasured warm-up pass);
- **latency**, all-GenAI payload, at half of B's median peak: send → arrival of a
  request's last span at the sink, p50 and p99, for A, G, T, B, and B with a reorder
  window of 0 (``B0``: our processing alone, without the wait that orders late spans).

No figure without every span delivered once: after each run the sink must hold exactly
the spans sent (``otlp_harness.delivered``), and the processor's ``/metrics`` must show
no span skipped as ``duplicate`` or ``late`` (``processor_checks.py``); either stops the
benchmark. The targets are judged in ``processor_report.py``. The Collector is built by
``scripts/build-otel collector`` (reused while ``collector/builder-config.yaml`` is
unchanged).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, commit, now, results_file
from benchmarks.processor import phoenix
from benchmarks.processor.checks import check_run
from benchmarks.processor.inprocess import full_path
from benchmarks.processor.otlp_harness import (
    Requests,
    Running,
    Sink,
    System,
    delivered,
    latencies,
    peak,
)
from benchmarks.processor.payloads import (
    GENAI_SHARE,
    SPANS_PER_REQUEST,
    count_spans,
    mixed_payloads,
    payloads,
)
from benchmarks.processor.report import markdown, write_docs
from benchmarks.processor.systems import balancer_system, collector_system, processor_system

RESULTS = ROOT / "benchmarks" / "results" / "processor_throughput.json"
RESULTS_SHOWN = "benchmarks/results/processor_throughput.json"
SUT_CORE, HARNESS_CORE = 0, 1
CONCURRENCY = 8
__all__ = ["main", "markdown", "measure"]


# ----------------------------------------------------------------- measuring


Runs = dict[str, list[dict[str, float]]]
"""Per system key, one row of figures per round."""


def _no_skips(system: System, work: Path) -> float:
    """Our processor's runs: nothing skipped as ``duplicate`` or ``late`` (its ``/metrics``,
    read while it runs), but for the late turns of a run without a reorder window, whose
    count is returned (0 for every other run)."""
    if not system.key.startswith("B"):
        return 0.0
    window_free = system.key == "B0"
    return check_run(work, system.key, late_allowed=window_free)["late"]


def _peak_run(system: System, sink: Sink, data: list[bytes], total: int, passes: tuple[int, int],
              work: Path) -> dict[str, float]:  # fmt: skip
    """One fresh run of ``system``: a warm-up pass, then ``total`` requests, both checked."""
    with Running(system, work, sink, SUT_CORE) as sut:
        peak(sut, sink, Requests(data, passes[0]), total=len(data), concurrency=CONCURRENCY)
        result = peak(sut, sink, Requests(data, passes[1]), total=total, concurrency=CONCURRENCY)
        _no_skips(system, work)
    delivered(sink, result.spans, f"peak of {system.key} in {work}")
    return vars(result)


def _run_peaks(
    systems: dict[str, list[System]], sink: Sink, data: dict[str, list[bytes]], rounds: int,
    total: int, work: Path,
) -> dict[str, Runs]:  # fmt: skip
    out: dict[str, Runs] = {}
    for name, group in systems.items():
        out[name] = {s.key: [] for s in group}
        out[name]["D"] = []
    n = 0
    for r in range(rounds):
        for name, group in systems.items():
            out[name]["D"].append({"spans_per_cpu_s": _in_process(data[name])})
            print(f"round {r + 1} {name} D: {out[name]['D'][-1]['spans_per_cpu_s']:,.0f} per "
                  "CPU s", flush=True)  # fmt: skip
            for system in group:
                n += 1
                passes = (900_000 + n, 1 + 1000 * n)
                row = _peak_run(system, sink, data[name], total, passes, work / f"peak-{n}")
                out[name][system.key].append(row)
                print(f"round {r + 1} {name} peak {system.key}: {row['spans_per_s']:,.0f} "
                      f"spans/s, {row['spans_per_cpu_s']:,.0f} per CPU s, CPU "
                      f"{row['cpu_utilisation']:.0%}, {row['refused_requests']:.0f} refused",
                      flush=True)  # fmt: skip
    return out


def _in_process(data: list[bytes]) -> float:
    """Spans per CPU second of the processor's path in this process, on the systems' core."""
    os.sched_setaffinity(0, {SUT_CORE})
    try:
        return count_spans(data) / full_path(data)
    finally:
        os.sched_setaffinity(0, {HARNESS_CORE})


def _run_latency(
    systems: list[System], sink: Sink, data: list[bytes], rounds: int, rate: float,
    timing: dict[str, float], work: Path,
) -> Runs:  # fmt: skip
    out: Runs = {s.key: [] for s in systems}
    for r in range(rounds):
        for n, system in enumerate(systems):
            requests = Requests(data, first_pass=500_000 + 1000 * (r * len(systems) + n))
            run = work / f"latency-{r}-{system.key}"
            with Running(system, run, sink, SUT_CORE) as sut:
                samples, sent = latencies(sut, sink, requests, rate=rate,
                                          warmup=timing["warmup"], seconds=timing["latency"],
                                          spans_per_request=SPANS_PER_REQUEST)  # fmt: skip
                late = _no_skips(system, run)
            delivered(sink, sent, f"latency run of {system.key} in {run}")
            samples.sort()
            row = {"p50_ms": 1000 * statistics.median(samples),
                   "p99_ms": 1000 * samples[int(0.99 * (len(samples) - 1))],
                   "requests": len(samples), "late_turns": late}  # fmt: skip
            out[system.key].append(row)
            print(f"round {r + 1} latency {system.key} at {rate:,.0f} spans/s: p50 "
                  f"{row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms", flush=True)  # fmt: skip
    return out


STAGES: dict[str, tuple[str, str]] = {
    "receive and extract (gRPC handler, parse, engine inputs, write-ahead)":
        ("otel_compaction.processor.grpc", "GrpcReceiver._handle"),
    "engine (reorder window, de-duplication, ConversationAnalyzer)":
        ("otel_compaction.otlp.state", "ConversationState.apply"),
    "compaction metrics (OTel SDK histograms and counters)":
        ("otel_compaction.processor.results", "Results.record"),
    "forwarding (queue reads, gRPC client)": ("otel_compaction.processor.forward", "Forwarder"),
}  # fmt: skip
"""``--profile``'s stages: a sample belongs to the first stage whose function (a method's
qualified name, or any method of a class) is on its stack. Internals of the processor, checked
by ``stage_frames`` before a profile runs and by ``tests/processor/test_benchmark_harness.py``."""


def stage_frames() -> dict[str, str]:
    """Per stage, the text that marks its frames in py-spy's stacks.

    Raises:
        LookupError: naming every stage whose module, class or method moved.
    """
    frames, moved = {}, []
    for stage, (module_name, qualname) in STAGES.items():
        try:
            owner: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                owner = getattr(owner, part)
        except (ImportError, AttributeError) as exc:
            moved.append(f"{module_name}.{qualname} ({stage}): {exc}")
            continue
        frames[stage] = qualname + ("." if isinstance(owner, type) else "")
    if moved:
        raise LookupError("profile stages that moved (update STAGES):\n  " + "\n  ".join(moved))
    return frames


def profile(data: list[bytes], requests: int = 256) -> dict[str, float]:
    """Where B's Python time goes: ``py-spy record --gil`` during one peak run (needs py-spy)."""
    frames = stage_frames()
    os.sched_setaffinity(0, {HARNESS_CORE})
    sink = Sink(1, HARNESS_CORE)
    out = Path(tempfile.mkdtemp(prefix="spy-")) / "b.txt"
    try:
        with tempfile.TemporaryDirectory() as tmp, \
                Running(processor_system("B", 2.0), Path(tmp), sink, SUT_CORE) as sut:  # fmt: skip
            peak(sut, sink, Requests(data, 1), total=len(data), concurrency=CONCURRENCY)
            spy = subprocess.Popen(["py-spy", "record", "--gil", "-t", "-r", "100", "-f", "raw",
                                    "-o", str(out), "-p", str(sut.process.pid)],
                                   stdout=subprocess.DEVNULL)  # fmt: skip
            time.sleep(1)
            # From the first send until the sink has every span: the backlog included.
            peak(sut, sink, Requests(data, 100), total=requests, concurrency=CONCURRENCY)
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(60)
    finally:
        sink.close()
    shares = dict.fromkeys([*frames, "other"], 0)
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        stage = next((k for k, frame in frames.items() if frame in stack), "other")
        shares[stage] += int(count)
    total = sum(shares.values()) or 1
    return {stage: n / total for stage, n in shares.items()}


def machine(otelcol: str) -> dict[str, Any]:
    """Where the numbers come from."""
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")  # fmt: skip
    version = subprocess.run([otelcol, "--version"], capture_output=True, text=True).stdout
    return {"cpu": cpu, "cores": os.cpu_count(), "load_average": os.getloadavg(),
            "python": platform.python_version(), "collector": version.strip(),
            "date": now(), "commit": commit()}  # fmt: skip


def measure(quick: bool) -> dict[str, Any]:
    """Every run of the comparison, printing as it goes."""
    otelcol = subprocess.run([str(ROOT / "scripts" / "build-otel"), "collector"],
                             check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    os.sched_setaffinity(0, {HARNESS_CORE})
    rounds = 2 if quick else 5
    timing = {"requests": 64, "warmup": 1.0, "latency": 4.0} if quick else {
        "requests": 256, "warmup": 3.0, "latency": 15.0}  # fmt: skip
    data = {"genai": payloads(200), "mix": mixed_payloads(30)}
    a, g, t = (collector_system(otelcol, key) for key in "AGT")
    b, b0, c = processor_system("B", 2.0), processor_system("B0", 0.0), balancer_system(otelcol)
    results: dict[str, Any] = {
        "machine": machine(otelcol), "rounds": rounds, "timing": timing, "quick": quick,
        "payloads": {name: {"requests": len(d), "spans": count_spans(d),
                            "bytes": sum(map(len, d))} for name, d in data.items()},
        "genai_share": GENAI_SHARE,
    }  # fmt: skip
    print(results["machine"], flush=True)
    sink = Sink(2, HARNESS_CORE)
    try:
        with tempfile.TemporaryDirectory(prefix="processor-throughput-") as tmp:
            work = Path(tmp)
            systems = {"genai": [a, g, t, b, c], "mix": [a, g, t, b]}
            results["peak"] = _run_peaks(systems, sink, data, rounds, int(timing["requests"]),
                                         work)  # fmt: skip
            rate = statistics.median(r["spans_per_s"] for r in results["peak"]["genai"]["B"]) / 2
            results["latency_rate"] = rate
            results["latency"] = _run_latency([a, g, t, b, b0], sink, data["genai"], rounds,
                                              rate, timing, work)  # fmt: skip
        results["phoenix"] = phoenix.measure(data["genai"], SUT_CORE)  # None: not installed
    finally:
        sink.close()
    results["labels"] = {s.key: s.label for s in (a, g, t, b, b0, c)}
    results["labels"]["D"] = "(D) our processor's path in process, one thread, no network"
    return results


def main(argv: list[str] | None = None) -> int:
    """Measure (or re-render), write the results JSON and the docs' block."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="2 short rounds (smoke test): temp dir, no docs"
    )
    parser.add_argument("--json", type=Path, help=f"results file (default {RESULTS_SHOWN})")
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    parser.add_argument("--from-json", type=Path, help="render these results, measure nothing")
    parser.add_argument("--profile", action="store_true", help="only: where B's time goes")
    parser.add_argument("--install-phoenix", action="store_true",
                        help="only: build Arize Phoenix's venv, the optional peer")  # fmt: skip
    args = parser.parse_args(argv)
    if args.install_phoenix:
        print(phoenix.install())
        return 0
    if args.profile:
        for stage, share in profile(payloads(200)).items():
            print(f"{share:6.1%}  {stage}")
        return 0
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = measure(args.quick)
        path = results_file(args.json, RESULTS, scratch=args.quick or args.no_doc)
        path.write_text(json.dumps(results, indent=2))
        print(f"wrote {path}")
    print(markdown(results))
    if not args.no_doc and (args.from_json or not args.quick):
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
