"""The overhead benchmark times the first call of a new conversation and judges its target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.overhead import first as overhead_first
from benchmarks.overhead import report as overhead_report
from benchmarks.overhead import run as instrumentation_overhead

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "benchmarks" / "results" / "instrumentation_overhead.json"


def _first_cell(
    config: str, own_ms: float, length: int = 2000, task: bool = False
) -> dict[str, Any]:
    """A worker's result with one first-call cell: two calls of 10 ms CPU, ``own_ms`` own."""
    cell = {
        "first": True,
        "task": task,
        "stream": False,
        "length": length,
        "recent": 8,
        "cpu_ns": [10_000_000, 10_000_000],
        "times_ns": [50_000_000, 50_000_000],
        "inner_ns": [int((50 - own_ms) * 1e6)] * 2,
        "read_ns": [3_000_000, 3_000_000],
        "spans_per_call": 1.0,
        "verify": [{"name": "chat", "turn_index": 1}],
    }
    return {"provider": "anthropic", "config": config, "pass": 0, "cells": [cell]}


def test_the_plan_has_first_calls_at_2000_and_10000_messages_for_ours_and_its_peer() -> None:
    """Ours, python-genai and the baseline run first-call cells at both lengths, a long
    history and a one-message task after them; others none."""
    for config in ("plain", "official", "ours"):
        cells = overhead_first.first_cells(config, quick=False)
        assert [(c["length"], c.get("task", False)) for c in cells] == [
            (2000, False), (2000, True), (10000, False), (10000, True)
        ]  # fmt: skip
        assert all(c["first"] and not c["stream"] for c in cells)
    assert overhead_first.first_cells("openllmetry", quick=False) == []
    assert overhead_first.RECENT == 8
    assert instrumentation_overhead.parse_args(["--quick"]).first


def test_the_report_has_the_first_call_table_and_verdict_and_keeps_it_apart() -> None:
    """First-call cells become their own table and target line, never a step cell's times."""
    earlier = json.loads(RECORDED.read_text())
    runs = [*earlier["runs"], _first_cell("plain", 0.5), _first_cell("official", 1.5)]
    runs.append(_first_cell("ours", 4.0))
    args = instrumentation_overhead.parse_args(["--no-doc", "--providers", "anthropic"])
    args.write_json = False
    body = instrumentation_overhead.report(args, dict(earlier["meta"]), runs)
    assert "### First call of a new conversation" in body
    assert "| 2,000 | ours | 2 | 4.0 | 10.0 | 3.0 | 1 |" in body
    # ours 3.5 ms (less the baseline's 0.5) against 2 x 1.0 + 3.0 = 5.0 ms
    assert "- **met** at 2,000 messages: ours 3.5 ms against 2 x 1.0 ms" in body
    steps = overhead_report.summarize(earlier["runs"], clock="cpu")
    assert overhead_report.summarize(runs, clock="cpu") == steps


def test_a_new_task_after_the_recent_conversations_has_its_own_row_and_verdict() -> None:
    """A one-message first call is reported apart from the long first call of its length."""
    runs = [_first_cell(c, own, task=t) for c, own in (("plain", 0.0), ("official", 1.0),
            ("ours", 2.0)) for t in (False, True)]  # fmt: skip
    rows = overhead_first.summarize_first(runs)
    lines = overhead_first.render_first(rows)
    assert "| 1 after 2,000 | ours | 2 | 2.0 | 10.0 | 3.0 | 1 |" in lines
    assert "| 2,000 | ours | 2 | 2.0 | 10.0 | 3.0 | 1 |" in lines
    verdicts = overhead_first.first_verdicts(rows)
    assert verdicts[0].startswith("- **met** at 2,000 messages")
    assert verdicts[1].startswith("- **met** at a one-message task after 2,000 messages")


def test_a_first_call_slower_than_the_bound_is_missed() -> None:
    """Own time above twice the peer's plus the read is reported missed."""
    rows = overhead_first.summarize_first(
        [_first_cell("plain", 0.0), _first_cell("official", 1.0), _first_cell("ours", 5.5)]
    )
    assert overhead_first.first_verdicts(rows)[0].startswith("- **missed** at 2,000 messages")


@pytest.mark.slow
def test_the_worker_times_ours_first_calls(tmp_path: Path) -> None:
    """The worker's first-call cell times each call of a new conversation, the first seen
    as turn 1, after 8 recent conversations, with the read-once yardstick beside it."""
    cell = {"first": True, "stream": False, "length": 40, "calls": 2}
    spec = {"config": "ours", "provider": "anthropic", "pass": 0, "seed": 1, "cells": [cell]}
    spec_path, out_path = tmp_path / "spec.json", tmp_path / "out.json"
    spec_path.write_text(json.dumps(spec))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.overhead.worker", str(spec_path), str(out_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(out_path.read_text())["cells"]
    assert "error" not in result, result.get("traceback")
    assert result["first"]
    assert result["recent"] == 8
    assert len(result["times_ns"]) == len(result["inner_ns"]) == len(result["read_ns"]) == 2
    assert all(0 < i < t for t, i in zip(result["times_ns"], result["inner_ns"], strict=True))
    assert [s.get("turn_index") for s in result["verify"]] == [1]
    (row,) = overhead_first.summarize_first([{"config": "ours", "provider": "anthropic",
                                              "pass": 0, "cells": [result]}])  # fmt: skip
    assert row.own_ms is not None
    assert row.read_ms > 0
