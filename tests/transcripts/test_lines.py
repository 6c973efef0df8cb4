"""JSON Lines reading: broken lines are reported with file and line, then skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_compaction.transcripts.lines import (
    MAX_KEPT,
    Diagnostics,
    SkippedLine,
    TranscriptError,
    parse_line,
    read_json_lines,
)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b'{"a": ', "invalid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'"text"', "not a JSON object"),
        (b'{"a": "\xff"}', "not UTF-8"),
    ],
)
def test_parse_line_names_the_problem(raw: bytes, error: str) -> None:
    """Each kind of broken line gets an error message that says what is wrong."""
    value, message = parse_line(raw)
    assert value is None
    assert message is not None
    assert error in message


def test_blank_lines_are_neither_values_nor_errors() -> None:
    """A blank line (or a byte-order mark alone) is silently ignored."""
    assert parse_line(b"   \n") == (None, None)
    assert parse_line("\ufeff\n".encode()) == (None, None)


def test_read_json_lines_reports_line_numbers(tmp_path: Path) -> None:
    """Valid lines come out with their numbers; broken ones go to the diagnostics."""
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\nnot json\n{"b": 2}\n', encoding="utf-8")
    diagnostics = Diagnostics()
    lines = list(read_json_lines(path, diagnostics))
    assert lines == [(1, {"a": 1}), (4, {"b": 2})]
    assert [(s.file, s.line) for s in diagnostics.skipped] == [(str(path), 3)]
    assert str(diagnostics.skipped[0]).startswith(f"{path}:3: invalid JSON")


def test_diagnostics_count_everything_but_keep_a_bounded_list() -> None:
    """Past MAX_KEPT, skipped lines are counted but not kept, and the callback sees each."""
    seen: list[SkippedLine] = []
    diagnostics = Diagnostics(on_skip=seen.append)
    for line in range(MAX_KEPT + 5):
        diagnostics.skip("f.jsonl", line, "bad")
    assert diagnostics.skipped_count == MAX_KEPT + 5
    assert len(diagnostics.skipped) == MAX_KEPT
    assert len(seen) == MAX_KEPT + 5


def test_unreadable_file_raises_transcript_error(tmp_path: Path) -> None:
    """A directory passed as a file is an error naming it, raised when reading starts."""
    with pytest.raises(TranscriptError, match=str(tmp_path)):
        list(read_json_lines(tmp_path, Diagnostics()))
