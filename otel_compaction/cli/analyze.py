"""``otel-compaction analyze FILE...``: findings from traces and agent transcripts.

Reads OTLP/JSON trace files (the Collector's file exporter format), Claude Code
transcripts and Codex rollouts (the format is detected from the content), runs
the same engine as the live instrumentation, and prints a readable report, the
findings JSON (``--format json``) or a self-contained HTML report
(``--format html``). Exit status 0 whatever is found; 1 when a file could not
be read at all (the others are still analyzed); broken lines are reported and
skipped, and every run ends, on stderr and in the report, with what was skipped and
why (counts by reason and by file) and which files continue which.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from otel_compaction.cli._extras import REPORT
from otel_compaction.cli._inputs import (
    add_input_arguments,
    diagnostics_to_stderr,
    input_paths,
    print_run_summary,
    print_skip_total,
    progress_for,
)
from otel_compaction.config import Settings
from otel_compaction.report.build import analyze_files
from otel_compaction.report.model import FindingsReport
from otel_compaction.report.text import render_text

FORMATS = ("text", "json", "html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the subcommand's arguments."""
    add_input_arguments(
        parser, "OTLP/JSON trace files, Claude Code transcripts, Codex rollouts, or directories"
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="report format (default: text)"
    )
    parser.add_argument(
        "-o", "--out", type=Path, help="write the report to this file instead of stdout"
    )
    parser.add_argument(
        "--max-charts",
        type=int,
        default=50,
        metavar="N",
        help="HTML: draw charts for at most N conversations, flagged ones first (default: 50)",
    )


def run(args: argparse.Namespace) -> int:
    """Analyze the inputs and write the report."""
    missing = REPORT.problem("--format html") if args.format == "html" else None
    if missing:
        print(f"otel-compaction analyze: {missing}", file=sys.stderr)
        return 2
    paths = input_paths(args)
    diagnostics = diagnostics_to_stderr("analyze")
    progress = progress_for(args, paths, "analyze")
    report = analyze_files(paths, Settings.from_env(), diagnostics, progress)
    print_skip_total(diagnostics, "analyze")
    for bad in report.unreadable:
        print(f"otel-compaction analyze: cannot read {bad.path}: {bad.error}", file=sys.stderr)
    for empty in report.empty:
        print(
            f"otel-compaction analyze: {empty.path} is empty: nothing to analyze", file=sys.stderr
        )
    try:
        _write(report, args)
    except OSError as exc:
        print(f"otel-compaction analyze: cannot write {args.out}: {exc}", file=sys.stderr)
        return 1
    finally:
        print_run_summary(report, "analyze")
    if not paths:
        print("otel-compaction analyze: no input files found", file=sys.stderr)
        return 1
    return 1 if report.unreadable else 0


def _write(report: FindingsReport, args: argparse.Namespace) -> None:
    if args.format == "json":
        text = json.dumps(report.to_json(), indent=2) + "\n"
    elif args.format == "html":
        from otel_compaction.report.html import render_html  # plotly only when asked for

        text = render_html(report, max_charts=args.max_charts)
    else:
        text = render_text(report)
    if args.out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"otel-compaction analyze: wrote {args.out}", file=sys.stderr)
