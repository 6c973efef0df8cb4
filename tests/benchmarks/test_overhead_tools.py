"""The overhead tools that reach into internals still find them, and the harness measures ours.

The stages tool replaces internals of ``otel_compaction`` with timers, the own-time clock
replaces the anthropic SDK's ``create`` and stream steps, and the A/B runs another checkout's
package: each runs here in a subprocess (they patch what they touch), on the real anthropic
client over the benchmark's canned transport.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.overhead import first_stages
from benchmarks.overhead import instructions as overhead_instructions
from benchmarks.overhead import stages as overhead_stages
from otel_compaction import semconv as sc

ROOT = Path(__file__).resolve().parents[2]


def _python(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks.overhead.<module> argv`` from the checkout's root."""
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.overhead.{module}", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("stage", overhead_stages.STAGES, ids=lambda s: s.where)
def test_every_stage_names_a_function_that_exists(stage: overhead_stages.Stage) -> None:
    """Each stage of the stages tool resolves to a callable where the table says it is."""
    _, _, fn = overhead_stages.resolve(stage)
    assert callable(fn)


def test_a_stage_that_moved_is_named() -> None:
    """A stage whose function is gone is reported by its dotted name, not silently skipped."""
    moved = overhead_stages.Stage("gone", "otel_compaction.instrument._begin", "no_such_function")
    timers = overhead_stages.Timers()
    with pytest.raises(overhead_stages.StageError, match=r"_begin\.no_such_function \(gone\)"):
        timers.install([moved])


@pytest.mark.slow
def test_the_stages_tool_times_every_stage_of_a_call() -> None:
    """Run on ours, every stage's timer fires (the call still goes through each name)."""
    done = _python("stages", "--calls", "3", "--warmup", "2")
    assert done.returncode == 0, done.stderr
    for stage in overhead_stages.STAGES:
        assert stage.label in done.stdout


@pytest.mark.parametrize(
    "stage", [*first_stages.FIRST_STAGES, first_stages.Keeper.STAGE], ids=lambda s: s.where
)
def test_every_first_call_stage_names_a_function_that_exists(
    stage: overhead_stages.Stage,
) -> None:
    _, _, fn = overhead_stages.resolve(stage)
    assert callable(fn)


def test_the_stages_tool_times_first_calls_with_and_without_freeing(tmp_path: Path) -> None:
    """``--first``: every stage fires on a first call, both runs are reported, and keeping
    the forgotten histories alive until after the call really keeps some (a long history's
    first calls make the store forget the recent ones)."""
    out = tmp_path / "first.json"
    done = _python("stages", "--first", "--length", "3000", "--calls", "2", "--json", str(out))
    assert done.returncode == 0, done.stderr
    for stage in (*overhead_stages.STAGES, *first_stages.FIRST_STAGES):
        assert stage.label in done.stdout
    assert "freeing what the store forgot" in done.stdout
    runs = json.loads(out.read_text())["runs"]
    assert [r["forgotten_kept_by_the_tool"] for r in runs] == [False, True]
    assert all(r["read_once_us_median"] > 0 and r["own_us_median"] > 0 for r in runs)
    assert all(r["histories_forgotten_per_call"] >= 1 for r in runs)


def _worker(tmp_path: Path, config: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    spec = {"config": config, "provider": "anthropic", "pass": 0, "seed": 1, "cells": cells}
    spec_path, out_path = tmp_path / f"{config}.spec.json", tmp_path / f"{config}.out.json"
    spec_path.write_text(json.dumps(spec))
    done = _python("worker", str(spec_path), str(out_path))
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(out_path.read_text())
    assert "error" not in result, result.get("traceback")
    return result


@pytest.mark.slow
def test_the_worker_measures_ours_on_the_incremental_path(tmp_path: Path) -> None:
    """Ours emits one span per timed call, the verified one continuing a conversation (a turn
    after the untimed first call), and the SDK clock puts part of every call inside the SDK,
    never all of it."""
    cells = [{"stream": s, "length": 20, "warmup": 1, "calls": 4} for s in (False, True)]
    result = _worker(tmp_path, "ours", cells)
    assert Path(result["package_path"]) == ROOT / "otel_compaction"
    assert result["metrics"][sc.METRIC_INSTRUMENTATION_ERRORS.name] == 0
    for cell in result["cells"]:
        assert cell["spans_per_call"] == 1
        assert [s["turn_index"] > 1 for s in cell["verify"]] == [True]
        assert all(0 < i < t for t, i in zip(cell["times_ns"], cell["inner_ns"], strict=True))


@pytest.mark.slow
def test_the_telemetry_floor_emits_ours_attributes(tmp_path: Path) -> None:
    """(f) sets the same attribute keys on its span as ours does on a continuing call, so the
    floor stays the cost of ours' telemetry when ours' attributes change."""
    cells = [{"stream": False, "length": 20, "warmup": 1, "calls": 1}]
    ours = _worker(tmp_path, "ours", cells)["cells"][0]["verify"]
    floor = _worker(tmp_path, "telemetry_floor", cells)["cells"][0]["verify"]
    assert [s["name"] for s in floor] == [s["name"] for s in ours]
    assert [s["keys"] for s in floor] == [s["keys"] for s in ours]


@pytest.mark.slow
def test_the_ab_runs_another_checkout_of_the_package(tmp_path: Path) -> None:
    """The A/B compares a copy of the package with this tree, each side's worker importing
    its own checkout, and prints the paired difference."""
    other = tmp_path / "before"
    shutil.copytree(ROOT / "otel_compaction", other / "otel_compaction")
    done = _python(
        "ab", f"{other},{ROOT}", "--rounds", "1", "--lengths", "20", "--calls", "3",
        "--json", str(tmp_path / "ab.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{ROOT} - {other}, paired by round:" in done.stdout
    figures = json.loads((tmp_path / "ab.json").read_text())["own_us_per_round"]
    assert {name: len(by_cell["20 msgs"]) for name, by_cell in figures.items()} == {
        str(other): 1,
        str(ROOT): 1,
    }


def test_the_ab_refuses_a_side_that_is_neither_a_checkout_nor_a_configuration(
    tmp_path: Path,
) -> None:
    """A path without otel_compaction/ or an unknown key stops the A/B before any round."""
    done = _python("ab", f"{tmp_path},official", "--rounds", "1")
    assert done.returncode == 2
    assert "neither a checkout with otel_compaction/ nor one of" in done.stderr


def test_the_instruction_count_splits_off_the_garbage_collector() -> None:
    """callgrind_annotate lines: the collector's functions are counted apart, totals skipped."""
    annotated = """\
9,000 (100.0%)  PROGRAM TOTALS
5,000 (55.56%)  Python/ceval.c:_PyEval_EvalFrameDefault [/lib/libpython3.11.so]
3,000 (33.33%)  Modules/gcmodule.c:gc_collect_main [/lib/libpython3.11.so]
  600 ( 6.67%)  Objects/dictobject.c:dict_traverse [/lib/libpython3.11.so]
  400 ( 4.44%)  Objects/unicodeobject.c:unicode_hash
"""
    assert overhead_instructions.split_counts(annotated) == (5_400, 3_600)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (install-system-deps)")
def test_the_instruction_count_sees_ours_above_the_sdk_alone(tmp_path: Path) -> None:
    """Counted under callgrind, a call instrumented by ours does more work than the bare SDK's,
    and the worker imported this checkout's package."""
    done = _python(
        "instructions", f"plain,{ROOT}", "--warmup", "2", "--calls", "3",
        "--json", str(tmp_path / "counts.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "counts.json").read_text())["rows"]
    plain, ours = (row["instructions"] for row in rows)
    assert ours > plain > 0
    assert f"{ROOT} - plain: +" in done.stdout
