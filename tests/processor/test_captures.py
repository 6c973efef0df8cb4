"""Real captures of Claude Code's and Codex's own OTLP log export, judged by their figures.

The golden rows of ``test_golden`` compare the processor's output with the expected
files; these tests state what the expected findings are and why (the figures of the
capture, docs/processor.md#claude-code-and-codex-telemetry), that ``analyze`` reaches
the same ones, and what the processor counts on the way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import NumberDataPoint

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.extract import Item, ItemKind
from otel_compaction.report.build import analyze_files
from tests.processor.conftest import metrics_pipeline
from tests.processor.golden import TESTDATA, read_requests
from tests.processor.test_golden import CAPTURES, CLAUDE_CODE_CAPTURE, CODEX_CAPTURE

FIXED_PART = "24,689 tokens"
"""What each agent request after a compaction read from the cache: the system prompt and tools."""


def _items(name: str) -> list[Item]:
    return [
        item
        for _, request in read_requests(CAPTURES / f"{name}.jsonl")
        for item in logs_to_items(request)
    ]


def _expected(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        (TESTDATA / f"{name}.findings.json").read_text(encoding="utf-8")
    )
    return rows


def test_the_summarizer_calls_are_the_compactions_cost_not_turns() -> None:
    """Of 8 api_request events, the 3 with query_source=compact are summarizer items (their
    tokens, time and cost), the 5 of the agent are turns; each summarizer call comes just
    before a successful compaction."""
    items = _items(CLAUDE_CODE_CAPTURE)
    kinds = [item.kind for item in items]
    assert kinds.count(ItemKind.TURN) == 5
    assert kinds.count(ItemKind.COMPACTION) == 4
    summarizers = [i for i in items if i.kind is ItemKind.SUMMARIZER]
    assert [s.summarizer.input_tokens for s in summarizers if s.summarizer] == [
        3_300 + 33_516,
        4_744 + 29_373,
        12_967 + 30_940,
    ]
    first = summarizers[0].summarizer
    assert first is not None
    assert (first.output_tokens, first.duration_s, first.cost_usd) == (5_259, 54.115, 0.0658932)
    for summarizer in summarizers:
        following = items[items.index(summarizer) + 1]
        assert following.kind is ItemKind.COMPACTION
        assert following.compaction is not None
        assert not following.compaction.failed


def test_the_claude_code_capture_is_judged_as_its_figures_say() -> None:
    """The failed attempt (too_few_groups, context kept) is counted, not flagged; the three
    compactions that ran each bought nothing against the 24,689-token fixed part (the first
    counted by the next compaction one call later, the others by the next call's size at or
    above the trigger of 34,181); the run is a livelock whose remedy is the fixed part's."""
    findings = _expected(CLAUDE_CODE_CAPTURE)
    assert sorted((f["turn"], f["kind"], f["rule"]) for f in findings) == [
        (3, "ineffective_compaction", "refilled"),
        (4, "ineffective_compaction", "reclaimed"),
        (4, "reexpansion_livelock", "no_progress"),
        (5, "ineffective_compaction", "reclaimed"),
        (5, "reexpansion_livelock", "thrashing"),
    ]
    for finding in findings:
        assert FIXED_PART in finding["reason"]
        assert "shrink the tool set or the system prompt" in finding["reason"]
        assert "reset the compaction lineage" not in finding["reason"]
    assert all(f["kind"] not in ("lost_task", "short_run_compaction") for f in findings)


@pytest.mark.parametrize("name", [CLAUDE_CODE_CAPTURE, CODEX_CAPTURE])
def test_analyze_reaches_the_processors_verdicts(name: str) -> None:
    """``otel-compaction analyze`` on the capture finds what the processor finds."""
    report = analyze_files([CAPTURES / f"{name}.jsonl"], Settings())
    rows = sorted(
        (f.to_json() for f in report.findings), key=lambda d: json.dumps(d, sort_keys=True)
    )
    assert rows == _expected(name)
    assert not report.unreadable


def test_analyze_counts_agent_turns_only() -> None:
    """Claude Code: 5 agent turns and 4 compactions; Codex: 6 turns (the warm-up request at
    start-up is none) and no compaction, its events holding none."""
    report = analyze_files(
        [CAPTURES / f"{CLAUDE_CODE_CAPTURE}.jsonl", CAPTURES / f"{CODEX_CAPTURE}.jsonl"]
    )
    assert [c.to_json() for c in report.conversations] == [
        {"id": "45aa0643-b108-4d50-ab19-45fc6686b1a2", "turns": 5, "compactions": 4,
         "max_generation": 2},
        {"id": "01a05f2e-47d6-7e22-a1e4-391bafbb6e91", "turns": 6, "compactions": 0,
         "max_generation": 0},
    ]  # fmt: skip
    claude, codex = report.conversations
    assert (claude.agent, codex.agent) == ("claude-code", "codex_exec")
    assert [t.pressure.context_tokens for t in codex.turns] == [
        19_985, 20_193, 20_950, 21_167, 21_364, 21_691,
    ]  # fmt: skip


def test_the_failed_compaction_is_counted_by_its_error(tmp_path: Path) -> None:
    """``compaction.compactions.failed`` counts the attempt with error too_few_groups."""
    pipeline, reader = metrics_pipeline(tmp_path)
    for signal, request in read_requests(CAPTURES / f"{CLAUDE_CODE_CAPTURE}.jsonl"):
        pipeline.submit(signal, request, "http")
        pipeline.step()
    pipeline.drain()
    data = reader.get_metrics_data()
    assert data is not None
    failed: dict[tuple[tuple[str, Any], ...], int | float] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != sc.METRIC_FAILED_COMPACTIONS.name:
                    continue
                for point in metric.data.data_points:
                    if isinstance(point, NumberDataPoint) and point.value:
                        failed[tuple(sorted((point.attributes or {}).items()))] = point.value
    assert failed == {
        ((sc.COMPACTION_ERROR, "too_few_groups"), (sc.COMPACTION_SOURCE, "import")): 1
    }
