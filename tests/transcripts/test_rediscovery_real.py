"""Rediscovery on real sessions: the figures ``analyze`` gives, pinned with their reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction import semconv as sc
from otel_compaction.cli import main
from otel_compaction.config import Settings
from otel_compaction.transcripts.importer import import_files
from tests.attributes import attr_str

DATA = Path(__file__).resolve().parents[1] / "data"


def ledger(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict[str, Any]]:
    """The compaction ledger rows of one transcript, from ``analyze --format json``."""
    assert main(["analyze", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    return [row for led in report["compaction_ledger"] for row in led["compactions"]]


def test_three_files_read_again_after_a_normal_compaction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """aistrad-dd09f641 turn 12: three Reads of files read before the compaction, none edited
    since: 20,718 tokens fetched again in the 20 calls after it."""
    rows = ledger(capsys, DATA / "real-sessions" / "aistrad-dd09f641-3x.jsonl")
    first = rows[0]
    assert first["turn"] == 12
    assert first["rediscovery"] == {
        "calls": 3,
        "tokens": 20_718,
        "turns": first["rediscovery"]["turns"],
        "horizon_turns": 20,
        "tools": ["Read"],
    }
    assert [r["rediscovery"]["calls"] for r in rows[1:]] == [0, 0]


def test_one_call_compactions_measure_one_call(capsys: pytest.CaptureFixture[str]) -> None:
    """idaho-sub-a4be9d33: compactions one call apart cut each horizon to the one call between
    them, so no horizon counts another compaction's calls."""
    rows = ledger(capsys, DATA / "calibration-set" / "idaho-sub-a4be9d33-4x.jsonl")
    assert [r["rediscovery"]["horizon_turns"] for r in rows] == [1, 1, 1, 1]
    assert all(r["rediscovery"]["calls"] <= 4 for r in rows)


def test_a_codex_session_repeats_shell_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """The Codex rollout: seven shell commands run before the compaction are run again after
    it (3,657 tokens), keyed by their hashed command lines."""
    (row,) = ledger(capsys, DATA / "calibration-set" / "idaho-codex-2026-03-24-1x.jsonl")
    assert row["rediscovery"]["calls"] == 7
    assert row["rediscovery"]["tokens"] == 3_657
    assert row["rediscovery"]["tools"] == ["shell_command"]


def test_the_html_report_shows_the_ledger(tmp_path: Path) -> None:
    """--format html has the compaction ledger with the redone tokens of a real session."""
    out = tmp_path / "report.html"
    path = DATA / "real-sessions" / "aistrad-dd09f641-3x.jsonl"
    assert main(["analyze", str(path), "--format", "html", "--out", str(out)]) == 0
    html = out.read_text()
    assert "<h2>Compaction ledger</h2>" in html
    assert "20,718" in html


def test_import_emits_each_compactions_rediscovery_span_under_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``otel-compaction import`` writes one ``compaction.rediscovery`` span per compaction, a
    child of its compaction span and linked to it, with the figures ``analyze`` reports."""
    path = DATA / "real-sessions" / "aistrad-dd09f641-3x.jsonl"
    exporter = InMemorySpanExporter()
    assert not import_files([path], exporter, Settings()).errors
    spans = exporter.get_finished_spans()
    compactions = {attr_str(s, sc.COMPACTION_ID): s for s in spans if s.name == sc.SPAN_COMPACTION}
    found = [s for s in spans if s.name == sc.SPAN_REDISCOVERY]
    rows = ledger(capsys, path)
    assert [(s.attributes or {})[sc.REDISCOVERY_CALLS] for s in found] == [
        r["rediscovery"]["calls"] for r in rows
    ]
    assert [(s.attributes or {})[sc.REDISCOVERY_TOKENS] for s in found] == [
        r["rediscovery"]["tokens"] for r in rows
    ]
    assert (found[0].attributes or {})[sc.REDISCOVERY_TOKENS] == 20_718
    for span in found:
        compaction = compactions[attr_str(span, sc.COMPACTION_ID)]
        assert span.parent is not None
        assert span.parent.span_id == compaction.context.span_id
        assert [link.context.span_id for link in span.links] == [compaction.context.span_id]
