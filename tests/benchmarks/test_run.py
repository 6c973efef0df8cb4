"""``benchmarks/run``: one entry point that lists every benchmark and runs each in its venv."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run"
WORKERS = {"benchmarks.overhead.worker"}
"""Modules run by other modules, not by a person."""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUN), *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def _commands() -> dict[str, tuple[str, str]]:
    """Per command listed by ``--help``: its module and its venv."""
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    found = re.findall(r"^\s+\((benchmarks\.[\w.]+), (\.venv(?:-bench)?), ", done.stdout, re.M)
    names = re.findall(r"^  ([a-z][a-z-]+) ", done.stdout, re.M)
    assert len(names) == len(found)
    return {name: (module, venv) for name, (module, venv) in zip(names, found, strict=True)}


def test_help_lists_every_benchmark_a_person_runs() -> None:
    """Every module with a command line, but the worker, has a command; every command a module."""
    commands = _commands()
    assert "overhead" in commands
    modules = {module for module, _ in commands.values()}
    runnable = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "benchmarks").rglob("*.py")
        if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    }
    assert modules == runnable - WORKERS
    assert all((ROOT / (m.replace(".", "/") + ".py")).is_file() for m in modules)


def test_an_unknown_command_is_refused_with_the_list() -> None:
    """A misspelt command exits 2, names it, and lists the commands; nothing is installed."""
    done = _run("overheads")
    assert done.returncode == 2
    assert "unknown command 'overheads'" in done.stderr
    assert "detection-truth" in done.stderr


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="no .venv")
@pytest.mark.parametrize("command", [c for c, (_, venv) in _commands().items() if venv == ".venv"])
def test_each_development_venv_command_starts(command: str) -> None:
    """The commands that run in the development venv reach their module (its --help)."""
    done = _run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="no .venv")
def test_processor_memory_probes_run_in_their_own_processes() -> None:
    """``processor-inprocess --memory-only`` starts its probes (one process per mode and
    measure) as modules of the checkout and reads a figure from each."""
    done = _run("processor-inprocess", "--memory-only", "50")
    assert done.returncode == 0, done.stderr
    assert len(re.findall(r"^memory \((tap|enrich), (tracemalloc|rss)\): ", done.stdout, re.M)) == 4
