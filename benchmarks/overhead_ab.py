"""Own time per call of two trees of ours (or of ours and a competitor), interleaved.

    .venv-bench/bin/python benchmarks/overhead_ab.py OLD_TREE,NEW_TREE[,official] \\
        [--rounds 12] [--lengths 20,200,2000]

Each side is either a checkout of this repository (a path: ``git worktree add /tmp/old
<rev>``), run as ``ours`` with that checkout first on ``PYTHONPATH``, or a configuration key of
``overhead_configs`` (``official``, ``telemetry_floor``...), run from this tree. Every round
runs one worker process (``overhead_worker.py``, the benchmark's own) per side in a shuffled
order, non-streaming, anthropic; the figure is the median over rounds of each process's median
own time (call time minus time inside the SDK, as in the benchmark's own-time table), and for
each side after the first the median of its per-round differences from the first. For
before/after figures of a change in one sitting; the benchmark of record stays
``instrumentation_overhead.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAN = {20: (10, 100), 200: (5, 40), 2000: (2, 12)}
"""Warm-up steps and timed calls per length, as the full run's plan."""


def run_side(side: str, lengths: list[int], seed: int, tmp: Path) -> dict[int, float]:
    """One worker process for ``side``: its median own time (µs) at each length."""
    tree, config = (side, "ours") if os.sep in side else (str(HERE.parent), side)
    cells = [
        {"stream": False, "length": n, "warmup": PLAN[n][0], "calls": PLAN[n][1]} for n in lengths
    ]
    spec = {"config": config, "provider": "anthropic", "pass": 0, "seed": seed, "cells": cells}
    spec_path, out_path = tmp / "spec.json", tmp / "out.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=tree, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(
        [sys.executable, str(HERE / "overhead_worker.py"), str(spec_path), str(out_path)],
        cwd=HERE.parent,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    out = json.loads(out_path.read_text())
    if "error" in out:
        raise SystemExit(f"{side}: {out['error']}")
    medians = {}
    for cell in out["cells"]:
        own = [wall - inner for wall, inner in zip(cell["times_ns"], cell["inner_ns"], strict=True)]
        medians[cell["length"]] = statistics.median(own) / 1e3
    return medians


def main() -> None:
    """Run the rounds and print one line per side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("sides", help="comma-separated checkouts (paths) or configuration keys")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--lengths", default="20,200,2000")
    args = parser.parse_args()
    sides = args.sides.split(",")
    lengths = [int(n) for n in args.lengths.split(",")]
    unknown = [n for n in lengths if n not in PLAN]
    if unknown:
        parser.error(f"lengths must be among {sorted(PLAN)}: {unknown}")
    rng = random.Random(0)
    results: dict[str, dict[int, list[float]]] = {s: {n: [] for n in lengths} for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            order = sides[:]
            rng.shuffle(order)
            for side in order:
                for n, value in run_side(side, lengths, rng.randrange(1 << 30), Path(tmp)).items():
                    results[side][n].append(value)
    for side in sides:
        cells = "  ".join(
            f"{n} msgs {statistics.median(v):6.1f} µs (min {min(v):6.1f})"
            for n, v in results[side].items()
        )
        print(f"{side:30s} {cells}")
    base = sides[0]
    for side in sides[1:]:
        print(f"{side} - {base}, paired by round: {_paired(results[side], results[base])}")


def _paired(side: dict[int, list[float]], base: dict[int, list[float]]) -> str:
    """Median and quartiles of the per-round differences: each round runs every side within
    a minute, so the machine's drift between rounds (often ±20 % here) cancels out."""
    cells = []
    for n, values in side.items():
        diffs = sorted(a - b for a, b in zip(values, base[n], strict=True))
        q1, _, q3 = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else (diffs[0],) * 3
        cells.append(f"{n} msgs {statistics.median(diffs):+6.1f} µs (IQR {q1:+.1f}…{q3:+.1f})")
    return "  ".join(cells)


if __name__ == "__main__":
    main()
