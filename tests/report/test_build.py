"""analyze_files: the engine over every input kind, collected into the findings report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.report import analyze_files
from otel_compaction.transcripts.importer import import_files
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter
from tests.transcripts import TESTDATA


def test_every_test_file_in_one_report() -> None:
    """Claude Code, Codex, empty and unknown files together give one consistent report."""
    names = [
        "claude_basic.jsonl", "claude_no_compaction.jsonl", "claude_livelock.jsonl",
        "claude_reset.jsonl", "codex_rollout.jsonl", "empty.jsonl", "not_a_transcript.jsonl",
    ]  # fmt: skip
    report = analyze_files([TESTDATA / n for n in names], Settings())
    assert [c.to_json() for c in report.conversations] == [
        {"id": "5e551011-basic", "turns": 4, "compactions": 2, "max_generation": 0},
        {"id": "5e551011-basic/agent-a1b2c3", "turns": 1, "compactions": 0, "max_generation": 0},
        {"id": "5e551012-plain", "turns": 2, "compactions": 0, "max_generation": 0},
        {"id": "4e1f0c5a-livelock-0004", "turns": 93, "compactions": 11, "max_generation": 10},
        {"id": "7b2d9e31-reset-0004", "turns": 64, "compactions": 5, "max_generation": 0},
        {
            "id": "0199c0de-aaaa-7bbb-8ccc-000000000001",
            "turns": 5,
            "compactions": 3,
            "max_generation": 2,
        },
    ]
    assert [f.format for f in report.files] == [
        "claude-code", "claude-code", "claude-code", "claude-code", "codex", "empty", "unknown",
    ]  # fmt: skip
    assert [f.path for f in report.unreadable] == [str(TESTDATA / "not_a_transcript.jsonl")]
    assert report.skipped_count == 4


def test_livelock_transcript_is_flagged_and_its_reset_twin_is_not() -> None:
    """The livelock incident in Claude Code form is a re-expansion livelock; the reset is clean."""
    report = analyze_files(
        [TESTDATA / "claude_livelock.jsonl", TESTDATA / "claude_reset.jsonl"], Settings()
    )
    livelock, reset = report.conversations
    assert [(f.kind.value, f.rule, f.turn) for f in livelock.findings] == [
        ("reexpansion_livelock", "cadence", 90),
        ("reexpansion_livelock", "cadence", 92),
    ]
    assert "intervals [9, 7, 5, 3]" in livelock.findings[0].reason
    assert reset.findings == ()
    assert reset.max_generation == 0


def test_conversation_split_over_files_is_put_back_in_order(tmp_path: Path) -> None:
    """Spans of one conversation in two files, later half first, give the single-file verdicts."""
    whole = tmp_path / "whole.jsonl"
    import_files([TESTDATA / "claude_livelock.jsonl"], OtlpJsonFileExporter(whole))
    (line,) = whole.read_text(encoding="utf-8").splitlines()
    request = json.loads(line)
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(spans) == 93 + 11 + 11 + 1  # turns, compactions, their rediscovery, the root
    early, late = tmp_path / "early.jsonl", tmp_path / "late.jsonl"
    for path, part in ((early, spans[: len(spans) // 2]), (late, spans[len(spans) // 2 :])):
        request["resourceSpans"][0]["scopeSpans"][0]["spans"] = part
        path.write_text(json.dumps(request) + "\n", encoding="utf-8")
    split = analyze_files([late, early], Settings())
    single = analyze_files([whole], Settings())
    assert split.to_json() == single.to_json()
    assert single.to_json()["findings"]


def test_a_copied_transcript_is_read_once_and_named_a_copy(tmp_path: Path) -> None:
    """A copied transcript does not double the turns of one conversation: its records are
    read once, and the report says the copy repeats the first file."""
    first, second = tmp_path / "a.jsonl", tmp_path / "copy.jsonl"
    shutil.copy(TESTDATA / "claude_no_compaction.jsonl", first)
    shutil.copy(TESTDATA / "claude_no_compaction.jsonl", second)
    report = analyze_files([first, second], Settings())
    assert [(c.conversation_id, c.turn_count) for c in report.conversations] == [
        ("5e551012-plain", 2)
    ]
    (copy,) = report.continuations
    assert (copy.file, copy.earlier, copy.added) == (str(second), str(first), 0)
    assert copy.repeated > 0


def test_turn_and_compaction_series_are_kept_for_the_charts() -> None:
    """Each conversation keeps every turn's signals and every compaction's analysis."""
    report = analyze_files([TESTDATA / "claude_livelock.jsonl"], Settings())
    (conversation,) = report.conversations
    assert [t.turn_index for t in conversation.turns] == list(range(1, 94))
    assert [c.record.generation for c in conversation.compactions] == list(range(11))
    assert conversation.peak_token_fraction is not None
    assert 0.8 < conversation.peak_token_fraction <= 1.0
