"""Running a framework driver in its own environment, and reading what it wrote.

A driver (``tests/frameworks/drivers/``) runs one agent of the framework for real
against the scripted model server on loopback and prints JSON: the host's results,
the requests the server answered, and, instrumented, every span and finding. These
helpers run it and pick the spans the framework tests assert on.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

from otel_compaction import semconv as sc
from tests.frameworks.venvs import ROOT, framework_python, run_env

DRIVERS = Path(__file__).resolve().parent / "drivers"
TIMEOUT = 600


def drive(venv: str, driver: str, *args: str, windows: str) -> dict[str, Any]:
    """Run ``driver`` in ``venv``'s interpreter with ``args``; its JSON output.

    ``windows``: ``OTEL_PYTHON_COMPACTION_MODEL_WINDOWS``, the window the framework
    itself was configured with, so pressure is read against it.
    """
    python = framework_python(venv)
    done = subprocess.run(
        [str(python), str(DRIVERS / driver), *args],
        env=run_env({"OTEL_PYTHON_COMPACTION_MODEL_WINDOWS": windows}),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@functools.cache
def drive_module(venv: str, module: str, options: str) -> dict[str, Any]:
    """Run driver ``module`` (``tests.frameworks.drivers.NAME``) in ``venv``'s interpreter
    with ``options`` (JSON text); the report its last output line holds. Each set of
    options runs once per test session."""
    done = subprocess.run(
        [str(framework_python(venv)), "-m", module, options],
        cwd=ROOT,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.splitlines()[-1]))


def host_view(result: dict[str, Any]) -> dict[str, Any]:
    """What the host sees of a run (its results and the requests it sent), without telemetry."""
    telemetry = ("spans", "findings", "framework_windows")
    return {k: v for k, v in result.items() if k not in telemetry}


def inference_spans(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The attributes of every span that carries an LLM call's analysis (ours, or the
    framework's own ``chat`` span we enriched), in the order they ended."""
    return [
        s["attributes"]
        for s in result["spans"]
        if s["name"].startswith("chat") and sc.CONVERSATION_ID in s["attributes"]
    ]


def compaction_spans(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The attributes of every ``compaction`` span, in the order they ended."""
    return [s["attributes"] for s in result["spans"] if s["name"] == sc.SPAN_COMPACTION]


def turns_after_summaries(spans: list[dict[str, Any]]) -> list[int]:
    """The turn of the first agent call after each run of summarizer calls (no turn)."""
    turns: list[int] = []
    waiting = False
    for span in spans:
        turn = span.get(sc.TURN_INDEX)
        if turn is None:
            waiting = True
        elif waiting:
            turns.append(int(turn))
            waiting = False
    return turns
