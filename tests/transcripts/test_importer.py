"""otel-compaction import: spans like the live instrumentation's, and a faithful round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.report import analyze_files
from otel_compaction.transcripts.importer import import_files
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter
from tests.attributes import attr_str
from tests.transcripts import TESTDATA

TRANSCRIPTS = [
    TESTDATA / "claude_basic.jsonl",
    TESTDATA / "claude_no_compaction.jsonl",
    TESTDATA / "claude_livelock.jsonl",
    TESTDATA / "claude_reset.jsonl",
    TESTDATA / "codex_rollout.jsonl",
    TESTDATA / "empty.jsonl",
]


def _spans(paths: list[Path], settings: Settings | None = None) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    result = import_files(paths, exporter, settings or Settings())
    assert not result.errors
    return list(exporter.get_finished_spans())


def test_span_names_kinds_and_one_trace_per_conversation() -> None:
    """A root invoke_agent span parents chat {model} CLIENT spans and compaction spans."""
    spans = _spans([TESTDATA / "claude_basic.jsonl"])
    roots = [s for s in spans if s.parent is None]
    assert sorted(s.name for s in roots) == ["invoke_agent claude-code"] * 2
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert {s.name for s in chats} == {
        "chat claude-sonnet-4-5-20250929", "chat claude-haiku-4-5-20251001",
    }  # fmt: skip
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    compactions = [s for s in spans if s.name == sc.SPAN_COMPACTION]
    assert len(compactions) == 2
    assert all(s.kind is SpanKind.INTERNAL for s in compactions)
    for span in chats + compactions:
        root = next(r for r in roots if r.context.trace_id == span.context.trace_id)
        assert span.parent is not None
        assert span.parent.span_id == root.context.span_id
    assert {s.instrumentation_scope.schema_url for s in spans if s.instrumentation_scope} == {
        sc.SCHEMA_URL
    }


def test_inference_span_attributes() -> None:
    """Usage, model, provider and every compaction.* input the processor needs are set."""
    spans = _spans([TESTDATA / "claude_basic.jsonl"])
    first = min((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)
    attrs = dict(first.attributes or {})
    assert attrs[sc.GEN_AI_OPERATION_NAME] == sc.OPERATION_CHAT
    assert attrs[sc.GEN_AI_PROVIDER_NAME] == sc.PROVIDER_ANTHROPIC
    assert attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] == 20_010
    assert attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 5_000
    assert attrs[sc.GEN_AI_CONVERSATION_ID] == "5e551011-basic"
    assert attrs[sc.CONVERSATION_ID] == "5e551011-basic"
    assert attrs[sc.TURN_INDEX] == 1
    assert attrs[sc.CONTEXT_TOKENS] == 20_010
    assert attrs[sc.TOOL_CALLS] == ("Bash",)
    assert attrs[sc.TOOL_CATEGORIES] == ("test",)
    assert sc.PRESSURE_TOKEN_FRACTION in attrs
    assert sc.PHASE_NAME in attrs


def test_sub_agent_spans_carry_no_gen_ai_conversation_id() -> None:
    """A made-up conversation id never goes into gen_ai.conversation.id."""
    spans = _spans([TESTDATA / "claude_basic.jsonl"])
    side = [
        s
        for s in spans
        if sc.CONVERSATION_ID in (s.attributes or {})
        and attr_str(s, sc.CONVERSATION_ID).endswith("a1b2c3")
    ]
    assert side
    assert all(sc.GEN_AI_CONVERSATION_ID not in (s.attributes or {}) for s in side)


def test_compaction_spans_link_to_their_lineage_parent() -> None:
    """Each compaction continuing a lineage links to its parent's span and names it."""
    spans = _spans([TESTDATA / "claude_livelock.jsonl"])
    compactions = sorted(
        (s for s in spans if s.name == sc.SPAN_COMPACTION), key=lambda s: s.start_time or 0
    )
    assert len(compactions) == 11
    by_id = {(s.attributes or {})[sc.COMPACTION_ID]: s for s in compactions}
    for span in compactions[1:]:
        attrs = span.attributes or {}
        parent = by_id[attrs[sc.LINEAGE_PARENT_ID]]
        assert [link.context.span_id for link in span.links] == [parent.context.span_id]
    last = compactions[-1].attributes or {}
    assert last[sc.LINEAGE_GENERATION] == 10
    assert last[sc.FLAG_LIVELOCK] is True
    assert sc.SUMMARY_TEXT not in last  # content capture is off by default


def test_summary_text_only_with_content_capture() -> None:
    """With capture on, compaction spans carry the summary text."""
    spans = _spans([TESTDATA / "claude_basic.jsonl"], Settings(capture_content=True))
    lossy = next(s for s in spans if (s.attributes or {}).get(sc.COMPACTION_MODE) == "lossy")
    assert "## Next action" in str((lossy.attributes or {})[sc.SUMMARY_TEXT])


def _round_trip(
    tmp_path: Path, paths: list[Path], settings: Settings
) -> tuple[dict[str, Any], dict[str, Any]]:
    out = tmp_path / "traces.jsonl"
    import_files(paths, OtlpJsonFileExporter(out), settings)
    direct = analyze_files(paths, settings).to_json()
    replayed = analyze_files([out], settings).to_json()
    return direct, replayed


def test_round_trip_gives_the_same_report(tmp_path: Path) -> None:
    """Import to OTLP/JSON then analyze finds exactly what analyzing the transcripts finds."""
    direct, replayed = _round_trip(tmp_path, TRANSCRIPTS, Settings())
    assert direct["findings"], "the test transcripts must produce findings to compare"
    assert replayed["findings"] == direct["findings"]
    assert replayed["conversations"] == direct["conversations"]


_CUT_SUMMARY = (
    "Summary:\n1. Primary Request and Intent:\n   fix the parser\n"
    "2. Key Technical Concepts:\n   - dates\n3. Files and Code Sections:\n   - parse.py\n"
)
"""A Claude Code summary that dropped six of its nine sections (four of the five fields)."""


def test_schema_findings_need_the_summary_text_on_the_spans(tmp_path: Path) -> None:
    """A summary missing fields its template asks for is flagged after a round trip only
    with capture."""
    source = (TESTDATA / "claude_no_compaction.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in source]
    boundary = {
        "type": "system", "subtype": "compact_boundary", "sessionId": "5e551012-plain",
        "uuid": "gap", "compactMetadata": {"trigger": "auto", "preTokens": 9000},
    }  # fmt: skip
    summary = {
        "type": "user", "sessionId": "5e551012-plain", "uuid": "gap-summary",
        "isCompactSummary": True, "message": {"role": "user", "content": _CUT_SUMMARY},
    }  # fmt: skip
    path = tmp_path / "gap.jsonl"
    lines = [records[0], records[1], records[2], boundary, summary, records[3]]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    kind = sc.FindingKind.SUMMARY_SCHEMA_COVERAGE.value

    direct, without = _round_trip(tmp_path, [path], Settings())
    assert kind in {f["kind"] for f in direct["findings"]}
    assert kind not in {f["kind"] for f in without["findings"]}
    direct, captured = _round_trip(tmp_path, [path], Settings(capture_content=True))
    assert captured["findings"] == direct["findings"]


@pytest.mark.parametrize("name", ["not_a_transcript.jsonl", "missing.jsonl"])
def test_unreadable_input_is_an_error_naming_the_file(name: str) -> None:
    """Unknown formats and missing files are reported, and the other files still import."""
    exporter = InMemorySpanExporter()
    result = import_files([TESTDATA / name, TESTDATA / "claude_no_compaction.jsonl"], exporter)
    assert [e.path for e in result.errors] == [str(TESTDATA / name)]
    assert result.conversations == 1
    assert exporter.get_finished_spans()
