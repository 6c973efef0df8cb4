"""otel-compaction analyze: formats, outputs and exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_compaction.cli import main
from tests.transcripts import TESTDATA

LIVELOCK = str(TESTDATA / "claude_livelock.jsonl")


def test_json_report_has_the_design_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints DESIGN.md's report with the livelock finding; exit 0."""
    assert main(["analyze", LIVELOCK, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"conversations", "findings", "skipped"}
    assert report["conversations"] == [
        {"id": "4e1f0c5a-livelock-0004", "turns": 93, "compactions": 11, "max_generation": 10}
    ]
    kinds = {f["kind"] for f in report["findings"]}
    assert kinds == {"reexpansion_livelock"}
    for finding in report["findings"]:
        assert set(finding) == {
            "kind",
            "conversation_id",
            "compaction_id",
            "turn",
            "reason",
            "rule",
        }


def test_text_report_is_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --format the readable report is printed, findings marked FLAGGED."""
    assert main(["analyze", LIVELOCK]) == 0
    out = capsys.readouterr().out
    assert out.startswith("otel-compaction analyze: 1 conversation, 11 compactions, 2 findings")
    assert "FLAGGED turn 90: reexpansion_livelock (cadence)" in out


def test_broken_lines_are_reported_on_stderr_and_exit_is_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Malformed lines are named with file and line on stderr and listed in the JSON."""
    path = str(TESTDATA / "claude_basic.jsonl")
    assert main(["analyze", path, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert f"skipped {path}:11: invalid JSON" in captured.err
    skipped = json.loads(captured.out)["skipped"]
    assert [(s["file"], s["line"]) for s in skipped] == [(path, 11), (path, 14), (path, 19)]


def test_unreadable_file_exits_one_and_the_rest_is_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file that cannot be read at all is named on stderr; the others are analyzed."""
    bad = str(TESTDATA / "not_a_transcript.jsonl")
    assert main(["analyze", bad, LIVELOCK, "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert f"cannot read {bad}" in captured.err
    assert len(json.loads(captured.out)["conversations"]) == 1


def test_empty_file_and_file_without_compaction(capsys: pytest.CaptureFixture[str]) -> None:
    """An empty file adds nothing; a session without compaction is listed with 0 compactions."""
    files = [str(TESTDATA / "empty.jsonl"), str(TESTDATA / "claude_no_compaction.jsonl")]
    assert main(["analyze", *files, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {
        "conversations": [
            {"id": "5e551012-plain", "turns": 2, "compactions": 0, "max_generation": 0}
        ],
        "findings": [],
        "skipped": [],
    }


def test_directory_input_and_out_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory is searched for transcripts; -o writes the report to a file."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((TESTDATA / "claude_reset.jsonl").read_bytes())
    out = tmp_path / "report.json"
    assert main(["analyze", str(folder), "--format", "json", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(out.read_text(encoding="utf-8"))["conversations"][0]["compactions"] == 5


def test_progress_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    """--progress draws the share of bytes read on stderr (never on stdout)."""
    assert main(["analyze", LIVELOCK, "--format", "json", "--progress"]) == 0
    captured = capsys.readouterr()
    assert "otel-compaction analyze: 100%" in captured.err
    json.loads(captured.out)


def test_html_report_to_a_file(tmp_path: Path) -> None:
    """--format html writes one self-contained page."""
    out = tmp_path / "report.html"
    assert main(["analyze", LIVELOCK, "--format", "html", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "conversation-chart-0" in page


def test_missing_file_exits_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A path that does not exist is an input that could not be read."""
    missing = str(tmp_path / "gone.jsonl")
    assert main(["analyze", missing]) == 1
    assert f"cannot read {missing}" in capsys.readouterr().err
