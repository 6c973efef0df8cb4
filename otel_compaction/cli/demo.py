"""``otel-compaction demo``: scripted agents on the real SDKs, observed, analyzed, judged.

Runs the demo's scenarios (all, or those named with ``--scenario``) in this
process against a local LLM API on 127.0.0.1, with the embedded instrumentation
and no external service; prints a progress line per scenario on stderr (unless
``--quiet``), then a verdict per scenario (expected and found findings) on
stdout, and writes ``traces.jsonl``, ``metrics.json``, ``findings.json`` and
``report.html`` to ``--out``. ``--otlp-endpoint`` also sends the telemetry to
an OpenTelemetry Collector. Exit status 0 when every verdict holds, 1 when one
does not, 2 when the demo cannot run. See ``docs/demo.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from otel_compaction.demo.runner import DEFAULT_OUT
from otel_compaction.demo.scenarios import SCENARIO_NAMES, SCENARIOS
from otel_compaction.report.text import counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the subcommand's arguments."""
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where to write the traces, metrics and reports (default: ./{DEFAULT_OUT})",
    )
    parser.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="also send the telemetry to this OTLP endpoint: HTTP/protobuf "
        "(e.g. http://localhost:4318), gRPC when the scheme is grpc or the port 4317",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIO_NAMES,
        metavar="NAME",
        help=f"run only this scenario (repeatable): {', '.join(SCENARIO_NAMES)}",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    """Run the demo and print the verdicts."""
    from otel_compaction.demo.runner import DemoError, run_demo
    from otel_compaction.demo.verdict import verdict_lines

    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    progress = None if args.quiet else _progress
    try:
        if progress is not None:
            progress(
                f"otel-compaction demo: {counted(len(chosen), 'scenario')}, writing to {args.out}"
            )
        result = run_demo(args.out, chosen, otlp_endpoint=args.otlp_endpoint, progress=progress)
    except DemoError as exc:
        print(f"otel-compaction demo: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"otel-compaction demo: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    lines = verdict_lines(result.verdicts)
    counter = ", ".join(f"{k} {v:g}" for k, v in result.findings_counter.items() if v)
    passed = sum(v.ok for v in result.verdicts)
    lines += [
        "",
        f"findings counter (compaction.findings): {counter or 'all 0'}",
        f"wrote {', '.join(str(p) for p in result.files)}",
        f"next: otel-compaction analyze {args.out / 'traces.jsonl'}"
        + "".join(f", or open {p}" for p in result.files if p.suffix == ".html"),
        f"{passed} of {len(result.verdicts)} scenarios as expected",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0 if result.ok else 1


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
