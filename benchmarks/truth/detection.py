"""The ground-truth benchmark of detection: generated runs with known truth, scored.

    benchmarks/run detection-truth                      # full run, rewrites docs/detection.md
    benchmarks/run detection-truth --runs 4 --no-doc    # a quick look; JSON to the temp dir
    benchmarks/run detection-truth --classes fixed_prefix,whole_history --runs 20 --no-doc
    benchmarks/run detection-truth --from-json benchmarks/results/detection_truth.json.gz

Every class of ``benchmarks.truth.classes`` runs ``--runs`` times (run ``i`` of class ``c`` has the
seed ``"<seed>:<c>:<i>"``) in worker processes with ``PYTHONHASHSEED`` set to the first
``--hash-seeds`` value; every ``--determinism-every``-th run is run again in two fresh
processes, one per hash seed, and the canonical spans of the three are compared. The
calibration set's files are analysed with ``otel-compaction analyze --format json``.
Results: ``benchmarks/results/detection_truth.json.gz`` and the generated part of
``docs/detection.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, python_m
from benchmarks.truth.classes import CLASSES
from benchmarks.truth.report import aggregate, calibration, render, update_doc

RESULTS = ROOT / "benchmarks" / "results" / "detection_truth.json.gz"
"""Every run's tallies and missed facts (gzip: the plain JSON is about 3 MB)."""
DOC = ROOT / "docs" / "detection.md"
CALIBRATION = ROOT / "tests" / "data" / "calibration-set"
"""The calibration set, kept in the repository."""


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=150, help="runs per class")
    parser.add_argument("--seed", type=int, default=1, help="base seed")
    parser.add_argument("--classes", default="", help="comma-separated classes (default all)")
    parser.add_argument("--hash-seeds", default="0,1", help="PYTHONHASHSEED of the two sides")
    parser.add_argument("--determinism-every", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the scoring")
    parser.add_argument("--calibration", type=Path, default=CALIBRATION)
    parser.add_argument("--no-doc", action="store_true", help="JSON to the temp dir, no doc")
    parser.add_argument("--from-json", type=Path, help="render a results file, run nothing")
    parser.add_argument("--show", help="CLASS:INDEX: run one, print its truth and what was seen")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _worker() -> None:
    """Run the plan read from stdin in this process; one JSON result per line on stdout."""
    from benchmarks.truth.harness import run_one

    plan = json.loads(sys.stdin.read())
    os.nice(5)  # a long benchmark on a shared machine yields to interactive work
    for name, index, seed in plan:
        try:
            result = run_one(name, index, seed)
        except Exception as exc:  # noqa: BLE001 - a broken run is reported, the rest go on
            result = {"class": name, "seed": f"{seed}:{name}:{index}", "crash": repr(exc)}
        result["pid"] = os.getpid()
        print(json.dumps(result), flush=True)


def _spawn(plan: list[list[Any]], hash_seed: str) -> subprocess.Popen[str]:
    """A worker process with ``PYTHONHASHSEED=hash_seed`` running ``plan``."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    command = [*python_m("benchmarks.truth.detection")[0], "--worker"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(json.dumps(plan))
    return process


def _collect(groups: dict[str, list[subprocess.Popen[str]]]) -> dict[str, list[dict[str, Any]]]:
    """Every worker's results by group, read from all workers at once.

    One reader thread per worker: a worker whose pipe is not read blocks once the pipe
    buffer is full, and reading them one after the other would run them one at a time.
    """
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in groups}

    def drain(label: str, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                results[label].append(json.loads(line))
                if len(results[label]) % 100 == 0:
                    print(f"  {label}: {len(results[label])} runs", file=sys.stderr, flush=True)
        process.wait()

    readers = [
        threading.Thread(target=drain, args=(label, process))
        for label, processes in groups.items()
        for process in processes
    ]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every planned run, the determinism reruns, the calibration set: the results."""
    names = [n for n in args.classes.split(",") if n] or list(CLASSES)
    plan = [[n, i, args.seed] for n in names for i in range(args.runs)]
    sample = [p for p in plan if p[1] % args.determinism_every == 0]
    first, second = args.hash_seeds.split(",")
    started = time.monotonic()
    jobs = [plan[j :: args.jobs] for j in range(args.jobs)]
    collected = _collect(
        {
            "scoring": [_spawn(chunk, first) for chunk in jobs if chunk],
            "left": [_spawn(sample, first)],
            "right": [_spawn(sample, second)],
        }
    )
    main, left, right = collected["scoring"], collected["left"], collected["right"]
    return {
        "command": " ".join(["benchmarks/run detection-truth", *sys.argv[1:]]),
        "seed": args.seed,
        "runs_per_class": args.runs,
        "hash_seeds": [first, second],
        "determinism_every": args.determinism_every,
        "seconds": round(time.monotonic() - started, 1),
        "runs": sorted(main, key=lambda r: (names.index(r["class"]), r["seed"])),
        "determinism": {"left": _digests(left), "right": _digests(right)},
        "calibration": calibration(args.calibration),
    }


def _digests(results: list[dict[str, Any]]) -> dict[str, str]:
    return {r["seed"]: r.get("digest", r.get("crash", "")) for r in results}


def _save(results: dict[str, Any], path: Path) -> None:
    """The results, without each run's truth and observations (``--show`` replays them)."""
    kept = [
        {k: v for k, v in r.items() if k not in ("truths", "observed")} for r in results["runs"]
    ]
    text = json.dumps({**results, "runs": kept}, separators=(",", ":"), sort_keys=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


def _load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    loaded: dict[str, Any] = json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: run (or re-render) and write the JSON and the doc."""
    args = _arguments(argv)
    if args.worker:
        _worker()
        return 0
    if args.show:
        from benchmarks.truth.harness import run_one

        name, index = args.show.rsplit(":", 1)
        for key, value in run_one(name, int(index), args.seed).items():
            rows = value if isinstance(value, list) and key != "errors" else [value]
            print(f"{key}:", *(json.dumps(v) for v in rows), sep="\n  " if len(rows) > 1 else " ")
        return 0
    if args.from_json is not None:
        results = _load(args.from_json)
    else:
        results = run(args)
        out = Path(tempfile.gettempdir()) / RESULTS.name if args.no_doc else RESULTS
        _save(results, out)
        print(f"results: {out}", file=sys.stderr)
    summary = aggregate(results)
    markdown = render(summary, results)
    if args.no_doc:
        print(markdown)
    else:
        update_doc(DOC, markdown)
        print(f"updated {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
