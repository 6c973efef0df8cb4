"""``benchmarks/run``: one entry point that lists every benchmark and runs each in its venv."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run"
WORKERS = {"overhead_worker.py"}
"""Scripts run by other scripts, not by a person."""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUN), *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def _commands() -> dict[str, tuple[str, str]]:
    """Per command listed by ``--help``: its script and its venv."""
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    found = re.findall(r"^\s+\(benchmarks/(\S+\.py), (\.venv(?:-bench)?), ", done.stdout, re.M)
    names = re.findall(r"^  ([a-z][a-z-]+) ", done.stdout, re.M)
    assert len(names) == len(found)
    return {name: (script, venv) for name, (script, venv) in zip(names, found, strict=True)}


def test_help_lists_every_benchmark_a_person_runs() -> None:
    """Every script with a command line, but the worker, has a command; every command a script."""
    commands = _commands()
    assert "overhead" in commands
    scripts = {script for script, _ in commands.values()}
    runnable = {
        p.name
        for p in (ROOT / "benchmarks").glob("*.py")
        if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    }
    assert scripts == runnable - WORKERS
    assert all((ROOT / "benchmarks" / s).is_file() for s in scripts)


def test_an_unknown_command_is_refused_with_the_list() -> None:
    """A misspelt command exits 2, names it, and lists the commands; nothing is installed."""
    done = _run("overheads")
    assert done.returncode == 2
    assert "unknown command 'overheads'" in done.stderr
    assert "detection-truth" in done.stderr


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="no .venv")
@pytest.mark.parametrize("command", [c for c, (_, venv) in _commands().items() if venv == ".venv"])
def test_each_development_venv_command_starts(command: str) -> None:
    """The commands that run in the development venv reach their script (its --help)."""
    done = _run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")
