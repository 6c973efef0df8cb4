"""The readable report."""

from __future__ import annotations

from otel_compaction.config import Settings
from otel_compaction.report import analyze_files, render_text
from tests.transcripts import TESTDATA


def test_text_report_lists_conversations_findings_and_problems() -> None:
    """Summary line, one block per conversation, FLAGGED findings, skipped lines, bad files."""
    report = analyze_files(
        [
            TESTDATA / "claude_livelock.jsonl",
            TESTDATA / "claude_basic.jsonl",
            TESTDATA / "not_a_transcript.jsonl",
        ],
        Settings(),
    )
    text = render_text(report)
    lines = text.splitlines()
    assert lines[0].startswith("otel-compaction analyze: 3 conversations, 13 compactions")
    assert "  intervals (turns)      9 9 9 9 9 9 7 5 3 2" in lines
    assert any(line.startswith("  FLAGGED turn 92: reexpansion_livelock") for line in lines)
    assert f"  {TESTDATA / 'claude_basic.jsonl'}:14: invalid JSON" in text
    assert "files that could not be read:" in lines
    assert text.endswith("\n")


def test_conversation_without_findings_says_so() -> None:
    """A clean conversation is listed with 'no findings'."""
    text = render_text(analyze_files([TESTDATA / "claude_no_compaction.jsonl"], Settings()))
    assert "  no findings" in text.splitlines()


def test_the_template_summaries_were_judged_against_is_listed() -> None:
    """Each conversation says which template its summaries were judged against, and that a
    summary of no known template was not judged."""
    text = render_text(analyze_files([TESTDATA / "claude_livelock.jsonl"], Settings()))
    (line,) = [x for x in text.splitlines() if x.startswith("  summary templates")]
    assert "unknown" in line
    assert line.endswith("(unknown: no template known, not judged)")
