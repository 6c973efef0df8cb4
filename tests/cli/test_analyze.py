"""otel-compaction analyze: formats, outputs and exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_compaction.cli import main
from tests.transcripts import TESTDATA

LIVELOCK = str(TESTDATA / "claude_livelock.jsonl")


def test_json_report_has_the_design_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints the report of docs/analyze.md with the livelock finding; exit 0."""
    assert main(["analyze", LIVELOCK, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {
        "conversations", "findings", "skipped", "skipped_summary", "continuations",
        "compaction_ledger",
    }  # fmt: skip
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
    """An empty file is reported as empty; a session without compaction has 0 compactions."""
    empty = str(TESTDATA / "empty.jsonl")
    files = [empty, str(TESTDATA / "claude_no_compaction.jsonl")]
    assert main(["analyze", *files, "--format", "json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report == {
        "conversations": [
            {"id": "5e551012-plain", "turns": 2, "compactions": 0, "max_generation": 0}
        ],
        "findings": [],
        "skipped": [{"file": empty, "line": None, "error": "empty file: nothing to analyze"}],
        "skipped_summary": {
            "lines": 0, "by_reason": {}, "first_by_reason": {}, "by_file": {},
            "files_unreadable": [],
            "files_empty": [empty],
        },
        "continuations": [],
        "compaction_ledger": [],
    }  # fmt: skip
    assert f"{empty} is empty: nothing to analyze" in captured.err
    assert main(["analyze", empty]) == 0
    assert f"empty files (nothing to analyze):\n  {empty}\n" in capsys.readouterr().out


def test_unreadable_inputs_are_in_the_json_skipped_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What stderr calls unreadable, --format json lists in "skipped" with a null line."""
    bad = str(TESTDATA / "not_a_transcript.jsonl")
    missing = str(tmp_path / "missing.jsonl")
    assert main(["analyze", bad, missing, LIVELOCK, "--format", "json"]) == 1
    captured = capsys.readouterr()
    skipped = json.loads(captured.out)["skipped"]
    assert [(s["file"], s["line"]) for s in skipped] == [(bad, None), (missing, None)]
    for entry in skipped:
        assert f"cannot read {entry['file']}: {entry['error']}" in captured.err


@pytest.fixture
def otlp_file(tmp_path: Path) -> Path:
    """An OTLP/JSON trace file of the basic Claude Code transcript (one request per line)."""
    from otel_compaction.config import Settings
    from otel_compaction.transcripts.importer import import_files
    from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter

    path = tmp_path / "traces.jsonl"
    import_files([TESTDATA / "claude_basic.jsonl"], OtlpJsonFileExporter(path), Settings())
    return path


def test_truncated_otlp_file_is_reported_as_truncated_with_line_and_offset(
    otlp_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace file cut inside its only request is truncated OTLP at line 1, byte N, not
    "not OTLP/JSON"; the JSON report lists the line."""
    line = otlp_file.read_bytes().splitlines()[0]
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(line[:1500])
    assert main(["analyze", str(cut), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "not OTLP/JSON" not in captured.err
    expected = "truncated OTLP/JSON: the request stops after 1500 bytes of the line"
    assert f"skipped {cut}:1: {expected}" in captured.err
    (entry,) = json.loads(captured.out)["skipped"]
    assert (entry["file"], entry["line"]) == (str(cut), 1)
    assert entry["error"].startswith(expected)


def test_last_line_cut_keeps_the_rest_and_names_the_line(
    otlp_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whole requests before the cut are analyzed; the cut line is reported as truncated."""
    lines = otlp_file.read_bytes().splitlines()
    assert len(lines) >= 1
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join([*lines, lines[0][:700]]))
    assert main(["analyze", str(cut)]) == 0
    captured = capsys.readouterr()
    assert f"{cut}:{len(lines) + 1}: truncated OTLP/JSON: the request stops after 700 bytes" in (
        captured.out
    )
    assert "5e551011-basic" in captured.out


def test_otlp_conversation_is_named_by_its_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An inferred conversation read from OTLP is shown with its service.name."""
    from otel_compaction.config import Settings
    from otel_compaction.transcripts.importer import import_files
    from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter

    path = tmp_path / "traces.jsonl"
    import_files(
        [TESTDATA / "codex_rollout.jsonl"],
        OtlpJsonFileExporter(path),
        Settings(),
        service_name="triage-agent",
    )
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"0199c0de-aaaa-7bbb-8ccc-000000000001  (triage-agent, {path})" in out


def test_counts_are_singular_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One of anything is said in the singular: 1 conversation, 1 turn, 1 compaction."""
    assert main(["analyze", str(TESTDATA / "claude_no_compaction.jsonl")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("otel-compaction analyze: 1 conversation, 0 compactions, 0 findings")
    assert "inputs: 1 file (claude-code 1); 0 lines skipped" in out


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


def test_a_run_ends_with_what_was_skipped_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single-line OTLP file over the line limit (as a 94 MB one is) exits 0, and the run
    ends on stderr and in every report format with the skip: file, line, reason, counts."""
    from otel_compaction.transcripts import lines

    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 4096)
    attribute = {"key": "service.name", "value": {"stringValue": "x" * 10_000}}
    huge = tmp_path / "huge.json"
    huge.write_text(
        json.dumps({"resourceSpans": [{"resource": {"attributes": [attribute]}}]}),
        encoding="utf-8",
    )
    assert main(["analyze", str(huge), LIVELOCK, "--format", "json"]) == 0
    captured = capsys.readouterr()
    reason = "line longer than 4096 bytes"
    assert captured.err.splitlines()[-3:] == [
        "otel-compaction analyze: skipped: 1 line in 1 file",
        f"otel-compaction analyze:   1 line: {reason} (first {huge}:1)",
        f"otel-compaction analyze:   1 line in {huge}",
    ]
    summary = json.loads(captured.out)["skipped_summary"]
    assert summary == {
        "lines": 1, "by_reason": {reason: 1}, "first_by_reason": {reason: f"{huge}:1"},
        "by_file": {str(huge): 1},
        "files_unreadable": [], "files_empty": [],
    }  # fmt: skip
    assert main(["analyze", str(huge), LIVELOCK]) == 0
    text = capsys.readouterr().out
    assert text.endswith(
        f"skipped: 1 line in 1 file\n  1 line: {reason} (first {huge}:1)\n  1 line in {huge}\n"
    )
    out = tmp_path / "report.html"
    assert main(["analyze", str(huge), LIVELOCK, "--format", "html", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "skipped: 1 line in 1 file" in page
    assert f"<code>1 line: {reason} (first {huge}:1)</code>" in page


def test_a_run_that_skipped_nothing_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Even a clean run ends with its account of skips, on stderr and in the text report."""
    assert main(["analyze", LIVELOCK]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == "otel-compaction analyze: skipped: nothing"
    assert captured.out.endswith("\nskipped: nothing\n")
