"""A Claude Code project folder with resumed, forked and compaction sub-agent transcripts:
each compaction counted once, and the report says which file continues which.

The records are skeletons of the real ones (``shared/data/real-sessions-2`` README, and
``huzhongyin/ai-dofiles``: ``subagents/agent-acompact-*.jsonl`` opens with its session's
``compact_boundary`` under the same ``uuid``, ``isSidechain`` true, and repeats the
session's records from there with their ``uuid``, timestamps and ``compactMetadata``; a
resumed session's file repeats its parent's records with only ``sessionId`` rewritten).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.cli import main
from otel_compaction.config import Settings
from otel_compaction.report.build import analyze_files

PARENT, RESUMED, FORKED, BORN = (
    "11111111-aaaa-4000-8000-000000000001",
    "22222222-bbbb-4000-8000-000000000002",
    "33333333-cccc-4000-8000-000000000003",
    "44444444-dddd-4000-8000-000000000004",
)


def _at(second: int) -> str:
    return f"2026-04-01T10:{second // 60:02d}:{second % 60:02d}.000Z"


class _Session:
    """Records of one session, chained by ``parentUuid`` as Claude Code writes them."""

    def __init__(self, session: str, tag: str) -> None:
        self.session, self.tag = session, tag
        self.records: list[dict[str, Any]] = []
        self.clock = 0

    def _add(self, record: dict[str, Any]) -> dict[str, Any]:
        self.clock += 7
        parent = self.records[-1]["uuid"] if self.records else None
        record = {"uuid": f"{self.tag}-{len(self.records):04d}", "parentUuid": parent,
                  "timestamp": _at(self.clock), "sessionId": self.session,
                  "isSidechain": False, **record}  # fmt: skip
        self.records.append(record)
        return record

    def call(self, context: int) -> None:
        """A tool result, then an API call whose request held ``context`` tokens."""
        n = len(self.records)
        self._add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{self.tag}{n}", "content": "f" * 800}
        ]}})  # fmt: skip
        usage = {"input_tokens": 2, "cache_creation_input_tokens": 500,
                 "cache_read_input_tokens": context - 502, "output_tokens": 300}  # fmt: skip
        self._add({"type": "assistant", "message": {
            "id": f"msg_{self.tag}{n}", "model": "claude-sonnet-4-5", "role": "assistant",
            "usage": usage, "content": [{"type": "tool_use", "id": f"toolu_{self.tag}{n + 2}",
                                         "name": "Read", "input": {"file_path": f"h:{n:016x}"}}],
        }})  # fmt: skip

    def compaction(self, pre: int) -> None:
        """A ``compact_boundary`` (auto, ``preTokens``) and the summary record after it."""
        boundary = self._add({"type": "system", "subtype": "compact_boundary",
                              "content": "Conversation compacted", "level": "info",
                              "isMeta": False, "compactMetadata": {"trigger": "auto",
                                                                   "preTokens": pre}})  # fmt: skip
        boundary["logicalParentUuid"], boundary["parentUuid"] = boundary["parentUuid"], None
        self._add({"type": "user", "isCompactSummary": True, "message": {
            "role": "user", "content": "Summary:\n1. Primary Request and Intent:\n" + "s" * 900
        }})  # fmt: skip

    def copy(self, session: str, tag: str, upto: int | None = None) -> _Session:
        """A new session that opens with these records (``sessionId`` rewritten)."""
        child = _Session(session, tag)
        child.records = [{**r, "sessionId": session} for r in self.records[:upto]]
        child.clock = self.clock
        return child


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _project(root: Path) -> dict[str, Path]:
    """A parent session with two compactions, and four files that continue it."""
    parent = _Session(PARENT, "p")
    for tokens in (40_000, 90_000, 150_000, 167_000):
        parent.call(tokens)
    parent.compaction(167_196)
    first_compaction = len(parent.records)
    for tokens in (60_000, 120_000, 171_000):
        parent.call(tokens)
    second = len(parent.records)
    parent.compaction(172_934)
    parent.call(58_000)
    resumed = parent.copy(RESUMED, "r")  # claude --resume: the whole parent, then its own
    for tokens in (70_000, 140_000, 169_000):
        resumed.call(tokens)
    resumed.compaction(169_400)
    resumed.call(52_000)
    forked = parent.copy(FORKED, "f", upto=first_compaction + 2)  # forked after compaction 1
    forked.call(64_000)
    acompact = [{**r, "isSidechain": True} for r in parent.records[second:]]
    summarizer = _Session(PARENT, "a")  # the summarizer's own call
    summarizer.call(174_007)
    acompact += [{**r, "isSidechain": True} for r in summarizer.records]
    born = _Session(BORN, "b")  # opens with the parent's second compaction under a new uuid
    born.records = [{**r, "uuid": f"b-{i}", "sessionId": BORN}
                    for i, r in enumerate(parent.records[second : second + 2])]  # fmt: skip
    born.call(49_000)
    files = {
        "parent": root / f"{PARENT}.jsonl",
        "resumed": root / f"{RESUMED}.jsonl",
        "forked": root / f"{FORKED}.jsonl",
        "born": root / f"{BORN}.jsonl",
        "acompact": root / PARENT / "subagents" / "agent-acompact-d8b45b7a148ae318.jsonl",
    }
    for name, records in (("parent", parent.records), ("resumed", resumed.records),
                          ("forked", forked.records), ("born", born.records),
                          ("acompact", acompact)):  # fmt: skip
        _write(files[name], records)
    return files


def test_each_compaction_of_a_folder_of_continued_sessions_is_counted_once(
    tmp_path: Path,
) -> None:
    """The parent's two compactions and the resumed session's own one: three, although
    five files hold seven compact_boundary records."""
    files = _project(tmp_path)
    report = analyze_files(sorted(files.values()), Settings())
    by_id = {c.conversation_id: len(c.compactions) for c in report.conversations}
    assert sum(by_id.values()) == 3
    assert (by_id[PARENT], by_id[RESUMED]) == (2, 1)
    before = {a.record.tokens_before for c in report.conversations for a in c.compactions}
    assert before == {167_196, 172_934, 169_400}


def test_the_report_says_which_file_continues_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resumed, forked, compaction-born and sub-agent files each continue the parent, in the
    JSON report and on stderr."""
    files = _project(tmp_path)
    assert main(["analyze", str(tmp_path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    pairs = {(c["file"], c["continues"]) for c in report["continuations"]}
    parent = str(files["parent"])
    assert pairs == {(str(files[n]), parent) for n in ("resumed", "forked", "born", "acompact")}
    resumed = next(c for c in report["continuations"] if c["file"] == str(files["resumed"]))
    assert (resumed["repeated_records"], resumed["new_records"]) == (20, 10)
    assert f"{files['acompact']} continues {parent}" in captured.err
    assert sum(c["compactions"] for c in report["conversations"]) == 3


def test_reading_the_continuations_first_still_counts_each_compaction_once(
    tmp_path: Path,
) -> None:
    """Given in the reverse order (the resumed file before its parent), the compactions
    are still counted once each, and the parent adds nothing it repeats."""
    files = _project(tmp_path)
    report = analyze_files(sorted(files.values(), reverse=True), Settings())
    assert sum(len(c.compactions) for c in report.conversations) == 3
    befores = sorted(a.record.tokens_before or 0 for c in report.conversations
                     for a in c.compactions)  # fmt: skip
    assert befores == [167_196, 169_400, 172_934]
    pairs = {(c.file, c.earlier) for c in report.continuations}
    assert (str(files["resumed"]), str(files["parent"])) in pairs
