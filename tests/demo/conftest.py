"""One full demo run through the console entry, shared by the end-to-end tests."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_compaction.cli import main


@dataclass(frozen=True)
class CliRun:
    """What ``otel-compaction demo`` returned, printed and wrote."""

    status: int
    stdout: str
    stderr: str
    out: Path


def run_cli(*args: str) -> CliRun:
    """Run ``otel-compaction demo ARGS`` in this process, capturing its output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["demo", *args])
    out_dir = Path(args[args.index("--out") + 1]) if "--out" in args else Path()
    return CliRun(status, out.getvalue(), err.getvalue(), out_dir)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """``otel-compaction demo --out DIR``: every scenario, once per test module."""
    return run_cli("--out", str(tmp_path_factory.mktemp("demo")))
