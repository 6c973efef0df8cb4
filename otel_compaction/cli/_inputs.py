"""What ``analyze`` and ``import`` share: input files, skipped-line messages, progress."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from otel_compaction.report.build import expand_inputs, total_size
from otel_compaction.report.model import FindingsReport
from otel_compaction.transcripts import Diagnostics, Progress, SkippedLine

MAX_PRINTED_SKIPS = 20
"""Skipped lines printed one by one; the rest are only counted."""


def add_input_arguments(parser: argparse.ArgumentParser, files_help: str) -> None:
    """``FILE...`` and ``--progress``."""
    parser.add_argument("files", metavar="FILE", nargs="+", type=Path, help=files_help)
    parser.add_argument(
        "--progress",
        action="store_true",
        help="show progress on stderr (the default when stderr is a terminal)",
    )


def diagnostics_to_stderr(command: str) -> Diagnostics:
    """Diagnostics that print the first skipped lines (and notes on lines read in part) to
    stderr as they are found."""

    def report(entry: SkippedLine) -> None:
        if diagnostics.skipped_count <= MAX_PRINTED_SKIPS:
            print(f"otel-compaction {command}: skipped {entry}", file=sys.stderr)

    def note(entry: SkippedLine) -> None:
        if diagnostics.note_count <= MAX_PRINTED_SKIPS:
            print(f"otel-compaction {command}: {entry}", file=sys.stderr)

    diagnostics = Diagnostics(on_skip=report, on_note=note)
    return diagnostics


def progress_for(args: argparse.Namespace, paths: list[Path], command: str) -> Progress | None:
    """A progress display when asked for or when stderr is a terminal."""
    if not (args.progress or sys.stderr.isatty()):
        return None
    return Progress(total_size(paths), sys.stderr, label=f"otel-compaction {command}")


def input_paths(args: argparse.Namespace) -> list[Path]:
    """The files to read, directories expanded."""
    return expand_inputs(args.files)


def print_run_summary(report: FindingsReport, command: str) -> None:
    """End the run on stderr with what was skipped and why, and which files continue which."""
    summary = report.skip_summary
    print(f"otel-compaction {command}: {summary.headline()}", file=sys.stderr)
    for line in summary.details():
        print(f"otel-compaction {command}:   {line}", file=sys.stderr)
    for continuation in report.continuations:
        print(f"otel-compaction {command}: {continuation}", file=sys.stderr)


def print_skip_total(diagnostics: Diagnostics, command: str) -> None:
    """Say how many lines were skipped in all, when some were not printed."""
    if diagnostics.skipped_count > MAX_PRINTED_SKIPS:
        print(
            f"otel-compaction {command}: {diagnostics.skipped_count} lines skipped in all "
            f"(the first {MAX_PRINTED_SKIPS} are shown)",
            file=sys.stderr,
        )
