"""Instructions per call of checkouts of ours, counted by valgrind: an A/B without timing noise.

    git worktree add /tmp/before <rev>
    benchmarks/run instructions /tmp/before,.,plain [--length 20] [--calls 40] [--json FILE]

Each side is a checkout of this repository (a path: ``.`` is this one) or a configuration
key of ``benchmarks.overhead.configs`` (``plain``: the SDK alone, no instrumentation), as in
``benchmarks.overhead.ab``. Each side runs one worker process under ``valgrind --tool=callgrind
--instr-atstart=no`` with ``PYTHONHASHSEED=0``: the benchmark's agent (anthropic,
non-streaming, the same client, transport and histories as the overhead benchmark) makes
``--warmup`` calls uncounted, then counting is switched on (``callgrind_control -i on``) for
``--calls`` calls. The figure is the instructions per call outside the garbage collector; the
collector's are shown apart, because how much it does depends on the heap the process
happens to hold (the timed benchmark freezes the heap before timing).

Why: the timed A/B on a shared 2-core machine cannot tell differences of 10-20% of our own
time from noise on some days, while the same checkout counted twice agrees within 0.1%.
Instructions are not time (a cache miss costs more than an add): this says whether a
change makes a call do more or less work; the timed benchmark says what a call costs.
Needs ``valgrind`` (Debian's package; ``scripts/install-system-deps`` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, commit, now, python_m
from benchmarks.overhead.ab import Side, parse_side

_GC = re.compile(r"gcmodule|traverse|visit_|VisitInstance|MaybeUntrack")
"""The garbage collector's functions in CPython's source (as callgrind_annotate names them)."""
_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$")


def worker(config: str, length: int, warmup: int, calls: int) -> None:
    """Inside valgrind: the benchmark's agent, ``calls`` counted calls after the warmup."""
    from benchmarks.overhead import worker as bench
    from benchmarks.overhead.clock import InnerClock
    from benchmarks.overhead.configs import BY_KEY
    from benchmarks.overhead.history import anthropic_history

    _, tracer_provider, _, meter_provider = bench.providers()
    clock = InnerClock(time.thread_time_ns)
    clock.install()
    chosen = BY_KEY[config]
    bench.instrument(chosen, "anthropic", tracer_provider, meter_provider)
    agent = bench.Agent(
        bench.make_call("anthropic", chosen, tracer_provider), anthropic_history, "i", clock
    )
    for _ in range(warmup):
        agent.step(length, False)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    for _ in range(calls):
        agent.step(length, False)
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    package = sys.modules.get("otel_compaction")
    print(json.dumps({"package_path": getattr(package, "__file__", None)}))


def split_counts(annotated: str) -> tuple[int, int]:
    """``(outside the collector, inside it)`` from ``callgrind_annotate`` output."""
    outside = inside = 0
    for line in annotated.splitlines():
        match = _LINE.match(line)
        if match is None or "PROGRAM TOTALS" in line:
            continue
        count = int(match.group(1).replace(",", ""))
        if _GC.search(match.group(2)):
            inside += count
        else:
            outside += count
    return outside, inside


def count_side(side: Side, length: int, warmup: int, calls: int, out: Path) -> dict[str, Any]:
    """Run ``side`` under callgrind (its output to ``out``): instructions per call, outside
    and inside the collector."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    command, extra = python_m("benchmarks.overhead.instructions", side.tree)
    env.update(extra)
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    worker_args = ["--worker", side.config, str(length), str(warmup), str(calls)]
    proc = subprocess.run(
        [*valgrind, *command, *worker_args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"{side.name}: worker exited {proc.returncode}: {proc.stderr[-600:]}")
    package = json.loads(proc.stdout.strip().splitlines()[-1])["package_path"]
    if side.tree is not None and not Path(package).is_relative_to(side.tree):
        raise SystemExit(f"{side.name}: the worker imported otel_compaction from {package}")
    annotated = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    outside, inside = split_counts(annotated)
    return {"side": side.name, "instructions": outside / calls, "gc_instructions": inside / calls}


def report(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per side, then every side against the first."""
    lines = [
        f"{r['side']:30s} {r['instructions'] / 1e6:8.3f} M instructions per call "
        f"(garbage collector apart: {r['gc_instructions'] / 1e6:.2f} M)"
        for r in rows
    ]
    base = rows[0]
    for r in rows[1:]:
        diff = r["instructions"] - base["instructions"]
        lines.append(
            f"{r['side']} - {base['side']}: {diff / 1e6:+.3f} M "
            f"({diff / base['instructions']:+.1%} of the whole call)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Count every side, print the comparison, optionally keep the figures as JSON."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        config, length, warmup, calls = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
        worker(config, length, warmup, calls)
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sides", help="comma-separated checkouts (paths) or configuration keys")
    parser.add_argument("--length", type=int, default=20, help="messages per call (default 20)")
    parser.add_argument("--warmup", type=int, default=10, help="uncounted calls (default 10)")
    parser.add_argument("--calls", type=int, default=40, help="counted calls (default 40)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        parser.error("needs valgrind and callgrind_annotate (apt-get install valgrind)")
    try:
        sides = [parse_side(name) for name in args.sides.split(",")]
    except ValueError as exc:
        parser.error(str(exc))
    if len({s.name for s in sides}) != len(sides):
        parser.error("name each side once")
    with tempfile.TemporaryDirectory(prefix="instructions-") as tmp:
        rows = []
        for i, side in enumerate(sides):
            out = Path(tmp) / f"callgrind.{i}"
            rows.append(count_side(side, args.length, args.warmup, args.calls, out))
            print(f"{side.name} counted", file=sys.stderr, flush=True)
    print("\n".join(report(rows)))
    if args.json:
        meta = {
            "date": now(),
            "command": " ".join(["benchmarks/run instructions", *argv]),
            "uname": " ".join(platform.uname()),
            "python": platform.python_version(),
            "commit": commit(),
        }
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
