"""Own time per call of two checkouts of ours (or of ours and a competitor), in one sitting.

    git worktree add /tmp/before <rev>
    benchmarks/run overhead-ab /tmp/before,.,official [--rounds 12] [--lengths 20,200,2000]
        [--stream] [--json benchmarks/results/overhead_ab.json]

Each side is either a checkout of this repository (a path: ``.`` is this one), run as ``ours``
with that checkout's ``otel_compaction`` first on ``PYTHONPATH``, or a configuration key of
``configs`` (``official``, ``openllmetry``, ``telemetry_floor``...), run from this
tree. The harness (worker, client, transport, histories) is always this tree's, so only the
package differs between checkouts; each worker reports where it imported ``otel_compaction``
from, and a side whose worker did not import its checkout's stops the run.

Every round runs one worker process (``overhead/worker.py``, the benchmark's own) per side in
a shuffled order, anthropic, non-streaming (``--stream``: streaming too), the cells in the
same order for every side. Per side and cell the figure is the median over rounds of each
process's median own time (call time minus time inside the SDK, as in the benchmark's
own-time table); for every pair of sides (the later one minus the earlier), the median and
quartiles of the per-round differences, and the ratio of the medians. Rounds run every side within a
minute or two, so the machine's drift between rounds cancels in the paired differences.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, commit, now, paired
from benchmarks.overhead.configs import BY_KEY
from benchmarks.overhead.run import PLAN, run_worker

CellKey = tuple[bool, int]  # stream, length


@dataclass(frozen=True, slots=True)
class Side:
    """One side of the comparison: a checkout run as ours, or a configuration of this tree."""

    name: str
    tree: Path | None
    config: str


def parse_side(name: str) -> Side:
    """A path to a checkout, or a configuration key.

    Raises:
        ValueError: neither a checkout holding ``otel_compaction`` nor a known key.
    """
    if name in BY_KEY:
        return Side(name, None, name)
    tree = Path(name).expanduser().resolve()
    if not (tree / "otel_compaction" / "__init__.py").is_file():
        known = ", ".join(BY_KEY)
        raise ValueError(f"{name!r} is neither a checkout with otel_compaction/ nor one of {known}")
    return Side(name, tree, "ours")


def run_side(side: Side, cells: list[dict[str, Any]], seed: int, tmp: Path) -> dict[CellKey, float]:
    """One worker process for ``side``: its median own time (µs) in each cell."""
    spec = {"config": side.config, "provider": "anthropic", "pass": 0, "seed": seed, "cells": cells}
    out = run_worker(spec, tmp, side.tree)
    if "error" in out:
        raise SystemExit(f"{side.name}: {out['error']}")
    if side.tree is not None and not Path(out["package_path"]).is_relative_to(side.tree):
        raise SystemExit(
            f"{side.name}: the worker imported otel_compaction from {out['package_path']}, "
            f"not from {side.tree}"
        )
    medians = {}
    for cell in out["cells"]:
        if "error" in cell:
            raise SystemExit(f"{side.name}: {cell['error']}")
        own = [wall - inner for wall, inner in zip(cell["times_ns"], cell["inner_ns"], strict=True)]
        medians[(cell["stream"], cell["length"])] = statistics.median(own) / 1e3
    return medians


def cells_for(lengths: Sequence[int], stream: bool, calls: int | None) -> list[dict[str, Any]]:
    """The cells each worker runs: the full run's plan, ``calls`` timed calls if given."""
    plan = PLAN["anthropic"]
    modes = (False, True) if stream else (False,)
    return [
        {"stream": s, "length": n, "warmup": plan[n][0], "calls": calls or plan[n][1]}
        for s in modes
        for n in lengths
    ]


def _label(key: CellKey) -> str:
    stream, length = key
    return f"{length:,} msgs{' streaming' if stream else ''}"


def report(sides: Sequence[Side], results: dict[str, dict[CellKey, list[float]]]) -> list[str]:
    """One line per side and cell; then every pair of sides, the later one minus the earlier."""
    lines = []
    for side in sides:
        for key, values in results[side.name].items():
            lines.append(
                f"{side.name:30s} {_label(key):22s} {statistics.median(values):7.1f} µs "
                f"(min {min(values):7.1f})"
            )
    for i, side in enumerate(sides):
        for base in sides[:i]:
            lines += _pair(side, base, results)
    return lines


def _pair(side: Side, base: Side, results: dict[str, dict[CellKey, list[float]]]) -> list[str]:
    """``side - base`` per cell: median and quartiles of the rounds, and the ratio of medians."""
    lines = [f"{side.name} - {base.name}, paired by round:"]
    for key, values in results[side.name].items():
        other = results[base.name][key]
        median, q1, q3 = paired(values, other)
        ratio = statistics.median(values) / statistics.median(other)
        lines.append(
            f"  {_label(key):22s} {median:+7.1f} µs (IQR {q1:+.1f}…{q3:+.1f}), "
            f"ratio of medians {ratio:.2f}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds, print the comparison, optionally keep the figures as JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sides", help="comma-separated checkouts (paths) or configuration keys")
    parser.add_argument("--rounds", type=int, default=12, help="rounds (default 12)")
    parser.add_argument("--lengths", default="20,200,2000", help="among 20, 200, 2000")
    parser.add_argument("--stream", action="store_true", help="streaming calls too")
    parser.add_argument("--calls", type=int, help="timed calls per cell (default: the full plan)")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    try:
        sides = [parse_side(name) for name in args.sides.split(",")]
    except ValueError as exc:
        parser.error(str(exc))
    if len({s.name for s in sides}) != len(sides) or len(sides) < 2:
        parser.error("name at least two different sides")
    lengths = [int(n) for n in args.lengths.split(",")]
    if unknown := [n for n in lengths if n not in PLAN["anthropic"]]:
        parser.error(f"lengths must be among {sorted(PLAN['anthropic'])}: {unknown}")
    cells = cells_for(lengths, args.stream, args.calls)
    rng = random.Random(0)
    keys = [(bool(c["stream"]), int(c["length"])) for c in cells]
    results = {s.name: {key: list[float]() for key in keys} for s in sides}
    started, load = time.monotonic(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="overhead-ab-") as tmp:
        for round_no in range(args.rounds):
            order = sides[:]
            rng.shuffle(order)
            seed = rng.randrange(1 << 30)  # the same cell order for every side of a round
            for side in order:
                for key, value in run_side(side, cells, seed, Path(tmp)).items():
                    results[side.name][key].append(value)
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    lines = report(sides, results)
    print("\n".join(lines))
    if args.json:
        meta = {
            "date": now(),
            "command": " ".join(["benchmarks/run overhead-ab", *(argv or sys.argv[1:])]),
            "uname": " ".join(platform.uname()),
            "nproc": os.cpu_count(),
            "load_before": load,
            "load_after": os.getloadavg(),
            "wall_s": time.monotonic() - started,
        }
        trees = {s.name: {"config": s.config, "commit": commit(s.tree or ROOT)} for s in sides}
        rounds = {n: {_label(k): v for k, v in by.items()} for n, by in results.items()}
        payload = {"meta": meta, "sides": trees, "own_us_per_round": rounds, "report": lines}
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
