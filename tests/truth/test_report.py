"""The benchmark's tables and docs/detection.md, from the sampled runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.truth.classes import CLASSES
from benchmarks.truth.limits import UNEXPLAINED
from benchmarks.truth.report import BEGIN, END, aggregate, render, update_doc

DOC = Path(__file__).resolve().parents[2] / "docs" / "detection.md"


def _run(name: str, found: list[int], **extra: Any) -> dict[str, Any]:
    """One run's result as the workers write it (tallies are tp, fp, fn)."""
    miss = {"outcome": "found", "side": "fn", "fact": ["a", 3, True]}
    return {
        "class": name,
        "seed": f"7:{name}:0",
        "params": {"wire": "anthropic", "phases": "reported"},
        "digest": f"digest-{name}",
        "tallies": {"found": found, "conversation": [6, 0, 0]},
        "misses": [miss] if found[2] else [],
        **extra,
    }


def _results(runs: list[dict[str, Any]]) -> dict[str, Any]:
    digests = {r["seed"]: r["digest"] for r in runs}
    return {
        "command": "benchmarks/run detection-truth --runs 1",
        "seed": 7,
        "runs_per_class": 1,
        "hash_seeds": ["0", "1"],
        "determinism_every": 1,
        "seconds": 1.0,
        "runs": runs,
        "determinism": {"left": digests, "right": {**digests, runs[0]["seed"]: "other"}},
        "calibration": [],
    }


def test_the_tables_name_every_class_and_each_cell_below_100_percent(tmp_path: Path) -> None:
    """Rendered tables hold one row per class and a known-limit line per missed cell."""
    runs = [_run("livelock_run", [1, 0, 0]), _run("fixed_prefix", [0, 0, 2])]
    runs += [_run("fresh_task", [0, 0, 0]), _run("x", [1, 0, 0])]
    summary = aggregate(_results(runs))
    text = render(summary, _results(runs))
    assert text.startswith(BEGIN)
    assert text.endswith(END)
    assert "| fixed_prefix | 1 | **— / 0** |" in text
    assert "| fresh_task | 1 | — / — |" in text
    assert "| x | 1 | 100 / 100 |" in text
    assert "`fixed_prefix` / found (**— / 0**): a compaction one call after" in text
    assert "Seed: `7:fixed_prefix:0 fn (a, 3, True)`" in text
    assert "`livelock_run` / determinism (0 of 1 identical): spans differ between" in text
    assert "`x` / found" not in text
    assert "| anthropic | 4 |" in text
    assert "| reported phases | 4 |" in text
    assert UNEXPLAINED not in text
    doc = tmp_path / "detection.md"
    doc.write_text(f"# Title\n\n{BEGIN}\nold\n{END}\n\n## After\n")
    update_doc(doc, text)
    update_doc(doc, text)
    assert doc.read_text() == f"# Title\n\n{text}\n\n## After\n"


def test_the_doc_explains_every_class() -> None:
    """docs/detection.md has the generated block and a row of its classes table per class."""
    doc = DOC.read_text()
    assert BEGIN in doc
    assert END in doc
    assert [name for name in CLASSES if f"| `{name}` |" not in doc] == []
