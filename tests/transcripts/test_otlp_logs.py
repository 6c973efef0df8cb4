"""OTLP/JSON log files (an agent's own events) in ``analyze``; failures and late findings in
the spans ``import`` writes."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.report.build import analyze_files
from otel_compaction.semconv import CompactionSource
from otel_compaction.transcripts import (
    CompactionEvent,
    ConversationInfo,
    Diagnostics,
    Event,
    Format,
    Replayer,
    TurnEvent,
    detect_format,
)
from otel_compaction.transcripts.importer import import_files
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter
from otel_compaction.transcripts.spans import SpanWriter

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "otel-captures"
CLAUDE_CODE = CAPTURES / "telltale-claude-2.1.257-S7.jsonl"


def _findings(paths: list[Path], diagnostics: Diagnostics | None = None) -> list[object]:
    return [f.to_json() for f in analyze_files(paths, Settings(), diagnostics).findings]


def test_a_capture_of_log_requests_is_read_as_otlp_logs() -> None:
    """One ExportLogsServiceRequest per line is the otlp-logs format, and analyze judges it."""
    assert detect_format(CLAUDE_CODE) is Format.OTLP_LOGS
    report = analyze_files([CLAUDE_CODE], Settings())
    assert [f.format for f in report.files] == ["otlp-logs"]
    assert len(report.findings) == 5


def test_one_pretty_printed_log_document_gives_the_same_verdicts(tmp_path: Path) -> None:
    """All records in one indented ExportLogsServiceRequest: read whole, judged the same."""
    requests = [json.loads(line) for line in CLAUDE_CODE.read_text(encoding="utf-8").splitlines()]
    merged = {"resourceLogs": [rl for r in requests for rl in r["resourceLogs"]]}
    whole = tmp_path / "capture.json"
    whole.write_text(json.dumps(merged, indent=2), encoding="utf-8")
    assert detect_format(whole) is Format.OTLP_LOGS
    assert _findings([whole]) == _findings([CLAUDE_CODE])


def test_a_broken_or_foreign_line_is_skipped_with_its_reason(tmp_path: Path) -> None:
    """A cut-off line and a trace request inside a log file are skipped and named; the other
    lines are read."""
    lines = CLAUDE_CODE.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "mixed.jsonl"
    spans = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]})
    path.write_text("\n".join([*lines, lines[0][:40], spans]) + "\n", encoding="utf-8")
    diagnostics = Diagnostics()
    assert _findings([path], diagnostics) == _findings([CLAUDE_CODE])
    reasons = [s.error for s in diagnostics.skipped]
    assert len(reasons) == 2
    assert "truncated OTLP/JSON" in reasons[0]
    assert reasons[1] == "not an OTLP/JSON logs request"


def test_import_says_where_log_records_go(tmp_path: Path) -> None:
    """``import`` has no spans to write from log records and says who reads them."""
    result = import_files([CLAUDE_CODE], OtlpJsonFileExporter(tmp_path / "out.jsonl"), Settings())
    (error,) = result.errors
    assert "otel-compaction analyze" in error.reason


def _spans(events: list[Event]) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    writer = SpanWriter(provider.get_tracer("test"), Settings(), 1_000_000_000)
    replayer = Replayer(ConversationRegistry(Settings()))
    for event in events:
        writer.write(replayer.feed(event))
    for settled in replayer.registry.finish():
        writer.settle(settled)
    writer.close()
    return exporter


def _turn(tokens: int, cached: int | None = None) -> TurnEvent:
    return TurnEvent("c", TurnObservation(tokens, window=200_000, cache_read_tokens=cached))


def _compaction(before: int, failed: bool = False, error: str | None = None) -> CompactionEvent:
    obs = CompactionObservation(
        CompactionSource.IMPORT, trigger="auto", tokens_before=before, failed=failed, error=error
    )
    return CompactionEvent("c", obs)


def test_a_failed_compaction_span_has_error_status() -> None:
    """The span of a compaction whose summary step failed has status ERROR with its error."""
    events: list[Event] = [
        ConversationInfo("c"),
        _turn(33_392),
        _compaction(34_181, failed=True, error="too_few_groups"),
        _turn(34_810),
    ]
    (span,) = [s for s in _spans(events).get_finished_spans() if s.name == sc.SPAN_COMPACTION]
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "too_few_groups"


def test_a_finding_the_next_compaction_adds_is_a_finding_span() -> None:
    """A compaction judged again by the next one (bought one turn) is already written: its
    finding comes as a ``compaction.finding`` span linked to it."""
    events: list[Event] = [
        ConversationInfo("c"),
        _turn(34_810),  # 303 tokens short of the compaction: reclaiming 3,002 looks enough
        _compaction(35_113),
        _turn(32_111, cached=24_689),
        _compaction(38_398),
        _turn(41_901, cached=24_689),
    ]
    spans = _spans(events).get_finished_spans()
    first = next(s for s in spans if s.name == sc.SPAN_COMPACTION)
    late = [s for s in spans if s.name == sc.SPAN_FINDING]
    refilled = [s for s in late if (s.attributes or {}).get(sc.FINDING_RULE) == "refilled"]
    assert len(refilled) == 1
    assert (refilled[0].attributes or {})[sc.COMPACTION_ID] == (first.attributes or {})[
        sc.COMPACTION_ID
    ]
    assert [link.context.span_id for link in refilled[0].links] == [first.context.span_id]
