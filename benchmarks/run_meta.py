"""What every results file records about its run: when, and which checkout was measured."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commit(tree: Path = ROOT) -> str:
    """The checkout's commit, ``+changes`` when tracked files differ from it."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=tree, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def now() -> str:
    """The time of the run, as the docs print it."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
