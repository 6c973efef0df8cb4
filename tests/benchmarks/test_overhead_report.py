"""The overhead benchmark's arithmetic, targets and doc update on fake numbers (it is no test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.overhead import markdown as overhead_markdown
from benchmarks.overhead import report as overhead_report
from benchmarks.overhead import targets as overhead_targets

LENGTHS = (20, 2000)


def _run(
    config: str,
    pass_no: int,
    ms: list[float],
    spans: float = 1.0,
    length: int = 20,
    stream: bool = False,
    own_ms: float | None = None,
) -> dict[str, Any]:
    """One worker's result with one cell: CPU (and wall) ``ms`` per call, own time ``own_ms``."""
    cell: dict[str, Any] = {
        "stream": stream,
        "length": length,
        "cpu_ns": [int(m * 1e6) for m in ms],
        "times_ns": [int(m * 1e6) for m in ms],
        "spans_per_call": spans,
        "verify": [],
    }
    if own_ms is not None:
        cell["inner_ns"] = [int((m - own_ms) * 1e6) for m in ms]
    return {"provider": "anthropic", "config": config, "pass": pass_no, "cells": [cell]}


def test_added_is_the_difference_of_pooled_medians() -> None:
    """Added time is median(config) - median(plain), pooled over passes, with per-pass spread."""
    runs = [
        _run("plain", 0, [1.0, 1.0, 1.2]),
        _run("plain", 1, [1.1, 1.1, 0.9]),
        _run("sdk", 0, [1.3, 1.3, 1.5]),
        _run("sdk", 1, [1.4, 1.4, 1.2]),
    ]
    rows = {r.config: r for r in overhead_report.summarize(runs)}
    assert rows["plain"].median_ms == pytest.approx(1.05)
    assert rows["sdk"].added_ms == pytest.approx(0.3)
    assert rows["sdk"].pass_added_ms == pytest.approx((0.3, 0.3))
    assert rows["sdk"].n == 6


def test_a_configuration_without_spans_is_not_reported_fast() -> None:
    """A configuration that emitted no span is shown as such and never meets a target."""
    runs = [_run("plain", 0, [1.0]), _run("ours", 0, [1.0], spans=0.0), _run("sdk", 0, [1.2])]
    rows = overhead_report.summarize(runs)
    table = overhead_markdown.results_table(rows, "anthropic", False)
    assert "no span emitted" in table
    verdicts = overhead_targets.evaluate_targets(rows)
    assert len(verdicts) == len(overhead_targets.TARGETS)
    assert {v.state for v in verdicts} == {"not measured"}


CPU_MS = {"plain": 1.0, "openinference": 20.0}
"""CPU time per call of the fake runs; every other configuration costs 5 ms."""


def _passes(
    own: dict[tuple[str, bool, int], list[float]], cpu: dict[str, float] | None = None
) -> list[Any]:
    """Runs of three passes; ``own`` gives own time per (config, stream, length) and pass."""
    cpu_ms = {**CPU_MS, **(cpu or {})}
    runs = []
    for (config, stream, length), per_pass in own.items():
        for pass_no, own_ms in enumerate(per_pass):
            ms = cpu_ms.get(config, 5.0)
            runs.append(_run(config, pass_no, [ms], length=length, stream=stream, own_ms=own_ms))
    return runs


def _own(**by_config: tuple[float, float, float, float]) -> dict[Any, list[float]]:
    """Own time (ms, constant over passes) at 20 and 2,000 msgs, non-streaming then streaming."""
    out: dict[Any, list[float]] = {}
    for config, (n20, n2000, s20, s2000) in {"plain": (0.0,) * 4, **by_config}.items():
        for stream, length, value in ((False, 20, n20), (False, 2000, n2000),
                                      (True, 20, s20), (True, 2000, s2000)):  # fmt: skip
            out[(config, stream, length)] = [value] * 3
    return out


def _verdicts(runs: list[Any]) -> dict[str, str]:
    rows = overhead_report.summarize(runs, clock="cpu")
    own = overhead_report.summarize(runs, clock="own")
    return {v.target: v.state for v in overhead_targets.evaluate_targets(rows, own=own)}


def test_each_target_is_judged_alone() -> None:
    """Ours lighter than (b) and (d), within 1.5x of (c) and flat over the history, yet heavier
    than (c) when streaming: only the streaming statement is missed."""
    t = overhead_targets
    own = _own(
        ours=(0.5, 0.9, 0.6, 1.0),
        official=(0.4, 0.7, 0.3, 0.5),
        openllmetry=(2.0, 9.0, 2.0, 9.0),
        openinference=(0.1, 0.1, 0.1, 0.1),  # works inside the SDK call: own time means nothing
    )
    assert _verdicts(_passes(own)) == {
        t.LIGHTER: "met",
        t.STREAMING: "missed",
        t.NON_STREAMING: "met",
        t.HISTORY: "met",
    }


def test_own_time_decides_where_both_sides_have_it() -> None:
    """Ours - OpenLLMetry is judged on own time (lighter) though CPU time says heavier; ours -
    OpenInference on CPU time, though its own time (it works inside the SDK call) is tiny."""
    own = _own(ours=(0.5, 0.9, 0.6, 1.0), openllmetry=(2.0,) * 4, openinference=(0.1,) * 4)
    runs = _passes(own, cpu={"openllmetry": 4.0})  # CPU: ours (5 ms) is 1 ms heavier
    rows = overhead_report.summarize(runs, clock="cpu")
    own_rows = overhead_report.summarize(runs, clock="own")
    lighter = overhead_targets.evaluate_targets(rows, own=own_rows)[0]
    assert lighter.state == "met"
    assert "ours - (b) OpenLLMetry (own time)" in lighter.detail
    assert "ours - (d) OpenInference (CPU time)" in lighter.detail
    assert "(b) OpenLLMetry (CPU time)" not in lighter.detail


def test_a_difference_inside_the_noise_is_not_called() -> None:
    """When the per-pass differences straddle zero, the verdict is 'within noise'."""
    own = _own(ours=(0.5, 0.9, 0.6, 1.0), official=(0.4, 0.7, 0.5, 0.9))
    own[("ours", False, 2000)] = [0.8, 1.4, 0.9]  # 2 x 0.5 = 1.0: below, above, below
    assert _verdicts(_passes(own))[overhead_targets.HISTORY] == "within noise"


def test_the_history_target_allows_twice_the_short_history() -> None:
    """Own time at 2,000 messages above twice that at 20 misses the history target."""
    own = _own(ours=(0.5, 1.2, 0.6, 1.0), official=(0.4, 0.9, 0.5, 0.9))
    assert _verdicts(_passes(own))[overhead_targets.HISTORY] == "missed"


def test_update_doc_keeps_other_sections(tmp_path: Path) -> None:
    """Rewriting the generated block leaves hand-written text and other sections untouched."""
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        f"# Benchmarks\n\n{overhead_report.SECTION}\n\nmy notes\n\n## Processor throughput\n\n"
        "keep me\n"
    )
    overhead_markdown.update_doc(doc, "first", "preamble")
    overhead_markdown.update_doc(doc, "second", "preamble")
    text = doc.read_text()
    assert "second" in text
    assert "first" not in text
    assert text.index("my notes") < text.index("second") < text.index("## Processor throughput")
    assert text.endswith("keep me\n")


def test_the_targets_table_opens_the_page(tmp_path: Path) -> None:
    """The targets table goes under the title the first time, and is replaced in place after."""
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nintro\n\n## Instrumentation overhead\n\nnotes\n")
    overhead_markdown.update_targets(doc, "table one")
    overhead_markdown.update_targets(doc, "table two")
    text = doc.read_text()
    assert "table one" not in text
    assert text.index("# Benchmarks") < text.index("table two") < text.index("intro")
    assert text.endswith("## Instrumentation overhead\n\nnotes\n")


def test_the_recorded_run_renders_every_target() -> None:
    """The results file of record renders a row per target with its state."""
    saved = Path(overhead_report.__file__).parents[1] / "results" / "instrumentation_overhead.json"
    earlier = json.loads(saved.read_text())
    runs = earlier["runs"]
    rows = overhead_report.summarize(runs, clock="cpu")
    own = [r for r in overhead_report.summarize(runs, clock="own") if r.provider == "anthropic"]
    verdicts = overhead_targets.evaluate_targets(rows, own=own)
    table = overhead_markdown.render_targets(earlier["meta"], verdicts)
    for target in overhead_targets.TARGETS:
        assert f"| {target} |" in table
    assert all(v.state in {"met", "missed", "within noise"} for v in verdicts)
