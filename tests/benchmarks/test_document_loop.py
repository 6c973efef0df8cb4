"""The document-loop benchmark runs both sides and reports ours' added time per call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks._meta import ROOT
from benchmarks.overhead import document_loop


def test_added_is_ours_less_the_sdk_alone_per_size() -> None:
    """The table's added time is the difference of the pooled medians at each size."""
    runs = [
        {"config": "plain", "size": 100, "cpu_ms": [1.0, 3.0], "wall_ms": [1.0], "own_ms": [0.1]},
        {"config": "ours", "size": 100, "cpu_ms": [5.0, 7.0], "wall_ms": [6.0], "own_ms": [4.1]},
    ]
    (row,) = document_loop.summarize(runs, [100])
    assert row["added_cpu_ms"] == pytest.approx(4.0)
    assert row["own_added_ms"] == pytest.approx(4.0)
    assert "| 0 kB | 2.0 | 6.0 | 4.0 | 4.0 |" in document_loop.table([row])


@pytest.mark.slow
def test_a_small_run_measures_both_sides(tmp_path: Path) -> None:
    """One pass at one small size writes every timed call of the SDK alone and of ours, ours
    imported from this checkout."""
    out = tmp_path / "loop.json"
    argv = ["--quick", "--sizes", "3000", "--calls", "2", "--json", str(out)]
    assert document_loop.main(argv) == 0
    written = json.loads(out.read_text())
    assert {r["config"]: len(r["cpu_ms"]) for r in written["runs"]} == {"plain": 2, "ours": 2}
    ours = next(r for r in written["runs"] if r["config"] == "ours")
    assert Path(ours["package_path"]) == ROOT / "otel_compaction"
    assert written["summary"][0]["added_cpu_ms"] is not None
