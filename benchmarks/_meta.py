"""What every results file records about its run: when, and which checkout was measured."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commit(tree: Path = ROOT) -> str:
    """The checkout's commit, ``+changes`` when tracked files differ from it."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=tree, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def python_m(module: str, tree: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The command running ``python -m module`` of these benchmarks (from ``cwd=ROOT``), and the
    environment variables it adds.

    With ``tree``, another checkout, the process imports that checkout's ``otel_compaction``
    and still this checkout's ``benchmarks``: ``-P`` keeps the working directory off the path,
    and ``PYTHONPATH`` holds a folder with only ``benchmarks`` in it, then ``tree``.
    """
    if tree is None:
        return [sys.executable, "-m", module], {}
    path = f"{_harness_only()}{os.pathsep}{tree}"
    return [sys.executable, "-P", "-m", module], {"PYTHONPATH": path}


@functools.cache
def _harness_only() -> Path:
    """A temporary folder whose one entry links to this checkout's ``benchmarks``."""
    folder = Path(tempfile.mkdtemp(prefix="benchmarks-path-"))
    (folder / "benchmarks").symlink_to(ROOT / "benchmarks", target_is_directory=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def now() -> str:
    """The time of the run, as the docs print it."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def results_file(given: Path | None, default: Path, scratch: bool) -> Path:
    """Where a run writes its results: ``given``, else ``default`` (under benchmarks/results),
    or the same name in the temp dir for a smoke run, whose numbers are not results."""
    if given is not None:
        return given
    return Path(tempfile.gettempdir()) / default.name if scratch else default


def replace_block(doc: Path, begin: str, end: str, block: str) -> None:
    """Replace the text from ``begin`` to ``end`` (both kept in ``block``) in ``doc``."""
    text = doc.read_text(encoding="utf-8")
    start, stop = text.index(begin), text.index(end) + len(end)
    doc.write_text(text[:start] + block + text[stop:], encoding="utf-8")


def paired(side: Sequence[float], base: Sequence[float]) -> tuple[float, float, float]:
    """Median and quartiles of the per-round differences ``side - base`` (the A/B sittings)."""
    diffs = sorted(a - b for a, b in zip(side, base, strict=True))
    if len(diffs) < 2:
        return diffs[0], diffs[0], diffs[0]
    q1, median, q3 = statistics.quantiles(diffs, n=4)
    return median, q1, q3
