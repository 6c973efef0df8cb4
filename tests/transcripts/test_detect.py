"""Format detection reads the content, not the file name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.transcripts import Format, TranscriptError, detect_format
from tests.transcripts import TESTDATA


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude_basic.jsonl", Format.CLAUDE_CODE),
        ("claude_no_compaction.jsonl", Format.CLAUDE_CODE),
        ("codex_rollout.jsonl", Format.CODEX),
        ("empty.jsonl", Format.EMPTY),
        ("not_a_transcript.jsonl", Format.UNKNOWN),
    ],
)
def test_detects_each_test_file(name: str, expected: Format) -> None:
    """Each test transcript is recognised as the format it was written in."""
    assert detect_format(TESTDATA / name) is expected


def test_detection_ignores_the_extension(tmp_path: Path) -> None:
    """A Codex rollout saved as .txt and a Claude Code transcript saved as .json are still known."""
    codex = tmp_path / "rollout.txt"
    claude = tmp_path / "session.json"
    shutil.copy(TESTDATA / "codex_rollout.jsonl", codex)
    shutil.copy(TESTDATA / "claude_basic.jsonl", claude)
    assert detect_format(codex) is Format.CODEX
    assert detect_format(claude) is Format.CLAUDE_CODE


def test_detection_skips_leading_broken_lines(tmp_path: Path) -> None:
    """Broken and undecisive first lines do not hide the format of the lines after them."""
    path = tmp_path / "mixed.jsonl"
    body = (TESTDATA / "claude_no_compaction.jsonl").read_text(encoding="utf-8")
    path.write_text('{"broken": \n\n{"type": "summary"}\n' + body, encoding="utf-8")
    assert detect_format(path) is Format.CLAUDE_CODE


def test_otlp_lines_and_pretty_printed_documents(tmp_path: Path) -> None:
    """One request per line and one pretty-printed request over the whole file are both OTLP."""
    request: dict[str, Any] = {"resourceSpans": [{"resource": {}, "scopeSpans": []}]}
    lines = tmp_path / "traces.jsonl"
    lines.write_text(json.dumps(request) + "\n", encoding="utf-8")
    pretty = tmp_path / "dump.json"
    pretty.write_text(json.dumps(request, indent=2), encoding="utf-8")
    assert detect_format(lines) is Format.OTLP
    assert detect_format(pretty) is Format.OTLP


def test_blank_lines_only_is_empty(tmp_path: Path) -> None:
    """A file of blank lines is empty, not unknown."""
    path = tmp_path / "blank.jsonl"
    path.write_text("\n  \n\n", encoding="utf-8")
    assert detect_format(path) is Format.EMPTY


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    """A file that cannot be opened raises an error that names it."""
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(TranscriptError, match=r"nope\.jsonl"):
        detect_format(missing)
