"""Instrumentation overhead: added time per LLM call, ours against the other GenAI instrumentations.

Usage (``benchmarks/run`` runs it in the benchmark venv, ``.venv-bench``)::

    benchmarks/run overhead            # ~10 min, updates docs/benchmarks.md and the results JSON
    benchmarks/run overhead --quick    # ~1 min smoke run, results to the temp dir, docs untouched
    benchmarks/run overhead --profile ours
    benchmarks/run overhead --from-json benchmarks/results/instrumentation_overhead.json

Every configuration (see ``overhead/configs.py``) runs in its own process, once per pass; each
pass runs all configurations in a shuffled order, so drift of the shared machine spreads over
all of them. The numbers are pooled over passes: median and p90 of per-call time, and
added = median(configuration) - median(uninstrumented).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks._meta import ROOT, commit, now, python_m
from benchmarks.overhead.configs import BY_KEY, CONFIGS, PROVIDERS
from benchmarks.overhead.first import first_cells, render_first, summarize_first
from benchmarks.overhead.markdown import render, render_targets, update_doc, update_targets
from benchmarks.overhead.report import summarize
from benchmarks.overhead.targets import evaluate_targets

WORKER = "benchmarks.overhead.worker"
# (warm-up steps, timed calls) per pass, by provider and history length; the lengths of a
# provider's plan are its default lengths. The openai SDK alone takes ~0.36 s per call at 2,000
# messages, with a spread between processes (tens of ms) that swamps every instrumentation's
# cost, so openai runs 2,000 messages only when asked (--lengths) and with few calls.
PLAN: dict[str, dict[int, tuple[int, int]]] = {
    "anthropic": {20: (10, 100), 200: (5, 40), 2000: (2, 12)},
    "openai": {20: (5, 50), 200: (3, 15)},
}
QUICK_PLAN: dict[str, dict[int, tuple[int, int]]] = {
    "anthropic": {20: (3, 20), 200: (2, 8), 2000: (1, 2)},
    "openai": {20: (3, 10), 200: (1, 4)},
}
EXTRA = {2000: (1, 3)}  # openai at 2,000 messages, when asked
MEASURED_PACKAGES = (
    "anthropic",
    "openai",
    "httpx2",
    "wrapt",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-instrumentation",
    "opentelemetry-instrumentation-anthropic",
    "opentelemetry-instrumentation-openai",
    "opentelemetry-instrumentation-genai-anthropic",
    "opentelemetry-instrumentation-genai-openai",
    "opentelemetry-util-genai",
    "openinference-instrumentation",
    "openinference-instrumentation-anthropic",
    "openinference-instrumentation-openai",
    "otel-compaction",
)
# Variables that would change an instrumentation's defaults; workers run without them.
_ENV_PREFIXES = ("OTEL_", "TRACELOOP_", "OPENINFERENCE_", "ANTHROPIC_", "OPENAI_")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; ``--quick`` shrinks the plan to a one-minute smoke run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="one-minute smoke run (anthropic, 2 passes)"
    )
    parser.add_argument("--passes", type=int, help="interleaved passes (default 7, quick 2)")
    parser.add_argument("--providers", help=f"comma-separated subset of {','.join(PROVIDERS)}")
    parser.add_argument("--configs", help=f"comma-separated subset of {','.join(BY_KEY)}")
    parser.add_argument(
        "--lengths",
        help="comma-separated history lengths (default: anthropic 20,200,2000; openai 20,200)",
    )
    parser.add_argument(
        "--json", type=Path, help="raw results file (default under benchmarks/results/)"
    )
    parser.add_argument(
        "--doc", type=Path, help="markdown file to update (default docs/benchmarks.md)"
    )
    parser.add_argument("--no-doc", action="store_true", help="do not touch the markdown file")
    parser.add_argument(
        "--profile", metavar="CONFIG", help="cProfile one pass of CONFIG and print hot spots"
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        help="re-aggregate the runs of an earlier results file and render the docs, run nothing",
    )
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument(
        "--no-first", dest="first", action="store_false", help="skip the first-call cells"
    )
    args = parser.parse_args(argv)
    args.providers = _csv(args.providers) or (
        ["anthropic"] if args.quick or args.profile else list(PROVIDERS)
    )
    args.configs = _csv(args.configs) or list(BY_KEY)
    args.lengths = [int(x) for x in _csv(args.lengths)] or None
    args.passes = args.passes or (1 if args.profile else 2 if args.quick else 7)
    for name in [*args.configs, *([args.profile] if args.profile else [])]:
        if name not in BY_KEY:
            parser.error(f"unknown configuration {name!r}; known: {', '.join(BY_KEY)}")
    # A re-render writes the results file only when asked; a run always writes one.
    args.write_json = args.json is not None or args.from_json is None
    # A smoke run's numbers are not results: they stay out of the repository.
    results = Path(tempfile.gettempdir()) if args.quick else ROOT / "benchmarks" / "results"
    suffix = "-quick" if args.quick else ""
    args.json = args.json or results / f"benchmarks.overhead.run{suffix}.json"
    if args.doc is None and not args.quick:
        args.doc = ROOT / "docs" / "benchmarks.md"
    if args.no_doc or args.profile:
        args.doc = None
    return args


def _csv(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def cells_for(provider: str, lengths: list[int] | None, quick: bool) -> list[dict[str, Any]]:
    """The cells one worker runs: both streaming modes at every length."""
    plan = {**EXTRA, **(QUICK_PLAN if quick else PLAN)[provider]}
    cells = []
    for length in lengths or sorted((QUICK_PLAN if quick else PLAN)[provider]):
        warmup, calls = plan[min(plan, key=lambda n: abs(n - length))]
        for stream in (False, True):
            cells.append({"stream": stream, "length": length, "warmup": warmup, "calls": calls})
    return cells


def _worker_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIXES)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env | extra


def run_worker(spec: dict[str, Any], tmp: Path, tree: Path | None = None) -> dict[str, Any]:
    """Run one configuration in a fresh process; its result, or an error record.

    ``tree`` is another checkout whose ``otel_compaction`` the worker imports (first on
    ``PYTHONPATH``); the worker and its harness are always this tree's.
    """
    name = f"{spec['provider']}-{spec['config']}-{spec['pass']}"
    spec_path, out_path, err_path = (
        tmp / f"{name}.{ext}" for ext in ("spec.json", "out.json", "stderr")
    )
    spec_path.write_text(json.dumps(spec))
    command, extra = python_m(WORKER, tree)
    with err_path.open("wb") as err:
        proc = subprocess.run(
            [*command, str(spec_path), str(out_path)],
            cwd=ROOT,
            env=_worker_env(extra),
            stdout=subprocess.DEVNULL,
            stderr=err,
            timeout=900,
            check=False,
        )
    stderr = err_path.read_text(errors="replace")
    base = {"config": spec["config"], "provider": spec["provider"], "pass": spec["pass"]}
    if proc.returncode != 0 or not out_path.exists():
        return {**base, "error": f"worker exited {proc.returncode}: {stderr.strip()[-400:]}"}
    result: dict[str, Any] = json.loads(out_path.read_text())
    result["stderr_lines"] = stderr.count("\n")
    return result


def versions() -> dict[str, str]:
    """Installed versions of everything measured (``absent`` when not installed)."""
    found = {}
    for name in MEASURED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def run_passes(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    """Every pass, each running every (provider, configuration) in a shuffled order."""
    rng = random.Random(args.seed)
    units = [(p, c) for p in args.providers for c in args.configs if p in BY_KEY[c].providers]
    failed: dict[tuple[str, str], str] = {}
    runs = []
    for pass_no in range(args.passes):
        rng.shuffle(units)
        for provider, config in units:
            if (provider, config) in failed:
                continue
            spec = {
                "config": config,
                "provider": provider,
                "pass": pass_no,
                "seed": rng.randrange(1 << 30),
                "cells": cells_for(provider, args.lengths, args.quick),
            }
            if provider == "anthropic" and args.first:
                spec["cells"] += first_cells(config, args.quick)
            started = time.monotonic()
            result = run_worker(spec, tmp)
            runs.append(result)
            status = result.get("error") or "ok"
            if result.get("error"):
                failed[(provider, config)] = result["error"]
            took = time.monotonic() - started
            line = (
                f"pass {pass_no + 1}/{args.passes} {provider:9} {config:13} {took:5.1f} s  {status}"
            )
            print(line, flush=True)
    return runs


def _plan_text(args: argparse.Namespace) -> str:
    parts = []
    for provider in args.providers:
        cells = cells_for(provider, args.lengths, args.quick)[::2]
        per = ", ".join(
            f"{c['length']:,} msgs {c['calls']} calls after {c['warmup']} warm-up steps"
            for c in cells
        )
        parts.append(f"{provider}: {per}")
    return (
        f"{args.passes} interleaved passes (one process per configuration per pass, shuffled "
        f"order); per pass and streaming mode, {'; '.join(parts)}."
    )


def profile(args: argparse.Namespace, tmp: Path) -> int:
    """cProfile one worker of ``args.profile`` and print where its time goes."""
    stats_path = tmp / "profile.pstats"
    provider = args.providers[0]
    spec = {
        "config": args.profile,
        "provider": provider,
        "pass": 0,
        "seed": args.seed,
        "cells": cells_for(provider, args.lengths, args.quick),
        "profile_path": str(stats_path),
    }
    result = run_worker(spec, tmp)
    if result.get("error") or not stats_path.exists():
        print(f"profile failed: {result.get('error')}")
        return 1
    stats = pstats.Stats(str(stats_path))
    # Only the timed calls are profiled; cProfile inflates small functions, so read the shares.
    stats.sort_stats("cumulative").print_stats(r"otel_compaction", 30)
    stats.sort_stats("tottime").print_stats(r"otel_compaction|opentelemetry|wrapt", 30)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _shown(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def describe(args: argparse.Namespace, argv: list[str] | None) -> dict[str, Any]:
    """Machine, versions and plan of this run (the ``meta`` of the results)."""
    return {
        "date": now(),
        "command": " ".join(["benchmarks/run overhead", *(sys.argv[1:] if argv is None else argv)]),
        "commit": commit(),
        "uname": " ".join(part for part in platform.uname() if part),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions(),
        "providers": args.providers,
        "plan": _plan_text(args),
        "json_path": _shown(args.json),
        "configs": {
            c.key: {"label": c.label, "sdk_span": c.sdk_span, "note": c.note} for c in CONFIGS
        },
    }


def metric_totals(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Metric totals by provider and configuration, summed over passes."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for run in runs:
        if run.get("error"):
            continue
        totals = out.setdefault(run["provider"], {}).setdefault(run["config"], {})
        for name, value in run.get("metrics", {}).items():
            totals[name] = totals.get(name, 0.0) + value
    return out


def report(args: argparse.Namespace, meta: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """Aggregate, write the JSON results and (unless disabled) the markdown section."""
    meta["metrics"] = metric_totals(runs)
    errors = {(r["provider"], r["config"]): r["error"] for r in runs if r.get("error")}
    rows = summarize(runs, errors, clock="cpu")
    wall_rows = summarize(runs, errors, clock="wall")
    own_rows = [r for r in summarize(runs, clock="own") if r.provider == "anthropic"]
    verdicts = evaluate_targets(rows, own=own_rows) if "anthropic" in args.providers else []
    first_rows = summarize_first(r for r in runs if r["provider"] == "anthropic")
    summary = {
        "cpu": [asdict(r) for r in rows],
        "wall": [asdict(r) for r in wall_rows],
        "own": [asdict(r) for r in own_rows],
        "first": [asdict(r) for r in first_rows],
    }
    payload = {
        "meta": meta,
        "summary": summary,
        "verdicts": [asdict(v) for v in verdicts],
        "runs": runs,
    }
    if args.write_json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, separators=(",", ":")))
    body = "\n".join([render(meta, rows, wall_rows, verdicts, own_rows), *render_first(first_rows)])
    if args.doc:
        update_doc(args.doc, body, PREAMBLE)
        update_targets(args.doc, render_targets(meta, verdicts))
    return body


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, write the raw JSON and the markdown section."""
    args = parse_args(argv)
    if args.from_json:
        earlier = json.loads(args.from_json.read_text())
        print(report(args, earlier["meta"], earlier["runs"]))
        return 0
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp_name:
        if args.profile:
            return profile(args, Path(tmp_name))
        meta = describe(args, argv)
        meta["load_before"] = _load()
        started = time.monotonic()
        runs = run_passes(args, Path(tmp_name))
        meta["wall_s"] = time.monotonic() - started
        meta["load_after"] = _load()
    print(report(args, meta, runs))
    print(f"wrote {args.json}" + (f" and {args.doc}" if args.doc else ""))
    return 0


PREAMBLE = """Added time per call of each GenAI instrumentation over the uninstrumented client,
measured side by side in one run by `benchmarks/run` (method: `benchmarks/README.md`)."""

if __name__ == "__main__":
    sys.exit(main())
