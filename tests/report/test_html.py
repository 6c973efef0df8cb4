"""The HTML report: self-contained, one figure per conversation, the lineage drawn as a tree."""

from __future__ import annotations

import re

import pytest

from otel_compaction.config import Settings
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionRecord,
    Finding,
    PhaseEstimate,
    Pressure,
    TurnAnalysis,
)
from otel_compaction.report import FindingsReport, analyze_files
from otel_compaction.report.figures import conversation_figure, phase_runs
from otel_compaction.report.html import chart_order, render_html
from otel_compaction.report.lineage_chart import lineage_lanes
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind, PhaseSource
from tests.transcripts import TESTDATA

FILES = [
    TESTDATA / "claude_reset.jsonl",
    TESTDATA / "claude_livelock.jsonl",
    TESTDATA / "codex_rollout.jsonl",
]


@pytest.fixture(scope="module")
def report() -> FindingsReport:
    """Three conversations, one of them flagged."""
    return analyze_files(FILES, Settings())


@pytest.fixture(scope="module")
def page(report: FindingsReport) -> str:
    """The rendered page."""
    return render_html(report, settings=Settings())


def test_page_needs_no_network(page: str) -> None:
    """No script or stylesheet is loaded from a URL; plotly.js is inline."""
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"<link[^>]*href\s*=\s*[\"']?https?:", page, re.IGNORECASE)
    assert not re.search(r"@import\s+url\(\s*[\"']?https?:", page, re.IGNORECASE)
    assert "Plotly.newPlot" in page
    assert page.count("plotly.js v") >= 1  # the library's own banner, embedded once
    assert page.count('<script type="text/javascript">') == 1


def test_one_chart_per_conversation_flagged_first(report: FindingsReport, page: str) -> None:
    """Each conversation gets a figure; the flagged conversation comes first."""
    assert chart_order(report, 50)[0].conversation_id == "4e1f0c5a-livelock-0004"
    charts = re.findall(r'id="(conversation-chart-\d+)"', page)
    assert charts == ["conversation-chart-0", "conversation-chart-1", "conversation-chart-2"]


def test_chart_limit(report: FindingsReport) -> None:
    """--max-charts bounds the figures and the page says how many were left out."""
    page = render_html(report, max_charts=1, settings=Settings())
    assert len(re.findall(r'id="conversation-chart-\d+"', page)) == 1
    assert "2 more conversations without a chart" in page


def test_findings_and_ids_are_escaped(report: FindingsReport, page: str) -> None:
    """Reasons appear in the findings table, HTML-escaped."""
    reason = report.findings[0].reason
    assert reason.replace("<", "&lt;").replace(">", "&gt;") in page


def test_figure_rows(report: FindingsReport) -> None:
    """Timeline, phase band, interval bars and lineage are all drawn; flagged ones stand out."""
    livelock = next(c for c in report.conversations if c.findings)
    figure = conversation_figure(livelock, Settings())
    names = [trace.name for trace in figure.data]
    assert "token fraction" in names
    assert "flagged compaction" in names
    assert "transition likelihood" in names
    assert "phase: explore" in names
    bars = next(t for t in figure.data if t.name == "interval")
    assert list(bars.y) == [9, 9, 9, 9, 9, 9, 7, 5, 3, 2]
    assert list(bars.marker.color).count("#d62728") == 2


def _analysis(cid: str, turn: int, parent: str | None, flagged: bool = False) -> CompactionAnalysis:
    record = CompactionRecord(
        compaction_id=cid, conversation_id="c", turn_index=turn, source=CompactionSource.IMPORT,
        mode=CompactionMode.LOSSY, trigger=None, tokens_before=None, tokens_after=None,
        summary_tokens=None, retained_tail_tokens=None, duplicated_tokens=None,
        carried_over_tokens=None, parent_id=parent, root_id=parent or cid, generation=0,
        cycle=None, token_fraction=None,
    )  # fmt: skip
    findings = (
        (Finding(FindingKind.REEXPANSION_LIVELOCK, "c", cid, turn, "r", "cadence"),)
        if flagged
        else ()
    )
    return CompactionAnalysis(record, None, None, findings)


def test_lineage_lanes_draw_a_tree() -> None:
    """A chain stays on its lane; a new lineage and a second child each open a lane."""
    compactions = [
        _analysis("a", 10, None),
        _analysis("b", 20, "a"),
        _analysis("c", 30, None),
        _analysis("d", 40, "b"),
        _analysis("e", 50, "b"),
        _analysis("f", 60, "ghost"),  # parent forgotten: a root of its own
    ]
    assert lineage_lanes(compactions) == {"a": 0, "b": 0, "c": 1, "d": 0, "e": 2, "f": 3}


def _turn(index: int, phase: str) -> TurnAnalysis:
    estimate = PhaseEstimate(phase, 0.9, 0.2, 0.1, PhaseSource.INFERRED, (0.9, 0.1, 0.0, 0.0))
    return TurnAnalysis("c", index, Pressure(1, 10, 0.1, 0.0), estimate)


def test_phase_runs_merge_consecutive_turns() -> None:
    """The phase band draws one bar per run of consecutive turns with the same phase."""
    phases = ["explore", "explore", "patch", "patch", "patch", "verify", "explore"]
    turns = [_turn(i, p) for i, p in enumerate(phases, start=1)]
    runs = phase_runs(turns)
    assert [(r.phase, r.first, r.last) for r in runs] == [
        ("explore", 1, 2), ("patch", 3, 5), ("verify", 6, 6), ("explore", 7, 7),
    ]  # fmt: skip
