"""OTLP/JSON trace files, read with the OTLP library's decoder and span mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import TurnObservation
from otel_compaction.transcripts import Diagnostics, read_otlp
from otel_compaction.transcripts.importer import import_files
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter
from tests.transcripts import TESTDATA


def test_recorded_categories_decide_the_phase_over_names() -> None:
    """A span's recorded category (a Bash call that ran sed -i) counts as that category."""
    registry = ConversationRegistry(Settings())
    by_name = registry.get("a")
    recorded = registry.get("b")
    for _ in range(4):
        by_name.observe_turn(TurnObservation(context_tokens=1000, tool_calls=("Bash",)))
        turn = recorded.observe_turn(
            TurnObservation(context_tokens=1000, tool_calls=("Bash",), tool_categories=("edit",))
        )
    assert turn.tool_categories == ("edit",)
    assert recorded.phase is not None
    assert recorded.phase.name == "patch"
    assert by_name.phase is not None
    assert by_name.phase.name != "patch"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude Code and Codex test transcripts imported as OTLP/JSON lines."""
    out = tmp_path_factory.mktemp("otlp") / "traces.jsonl"
    import_files(
        [TESTDATA / "claude_basic.jsonl", TESTDATA / "codex_rollout.jsonl"],
        OtlpJsonFileExporter(out),
    )
    return out


def test_imported_spans_read_back_as_turns_and_compactions(traces: Path) -> None:
    """Each inference span is a turn, each compaction span a compaction; the root is neither."""
    diagnostics = Diagnostics()
    items = list(read_otlp(traces, diagnostics))
    turns = [i for i in items if i.turn is not None]
    compactions = [i for i in items if i.compaction is not None]
    assert len(turns) == 4 + 1 + 5
    assert len(compactions) == 2 + 3
    assert diagnostics.skipped_count == 0


def test_shell_calls_get_their_recorded_category_back(traces: Path) -> None:
    """A Bash call that ran pytest reads back with arguments the filter classifies as test."""
    items = [i for i in read_otlp(traces, Diagnostics()) if i.turn is not None]
    first = next(i.turn for i in items if i.turn and i.turn.tool_calls == ("Bash",))
    assert first.tool_categories == ("test",)


def test_broken_otlp_line_is_skipped_with_its_number(traces: Path, tmp_path: Path) -> None:
    """A bad line among good requests is reported; the good ones are still read."""
    lines = traces.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "broken.jsonl"
    bad = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]})
    path.write_text("\n".join([lines[0], bad, *lines[1:]]) + "\n", encoding="utf-8")
    diagnostics = Diagnostics()
    items = list(read_otlp(path, diagnostics))
    assert [s.line for s in diagnostics.skipped] == [2]
    assert "traceId" in diagnostics.skipped[0].error
    assert len(items) == len(list(read_otlp(traces, Diagnostics())))


def test_pretty_printed_request_is_read_whole(tmp_path: Path) -> None:
    """A file holding one indented ExportTraceServiceRequest is read as one request."""
    exporter = InMemorySpanExporter()
    import_files([TESTDATA / "claude_no_compaction.jsonl"], exporter)
    line_file = tmp_path / "one.jsonl"
    writer = OtlpJsonFileExporter(line_file)
    writer.export(exporter.get_finished_spans())
    writer.shutdown()
    document = json.loads(line_file.read_text(encoding="utf-8"))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(document, indent=2), encoding="utf-8")
    diagnostics = Diagnostics()
    items = list(read_otlp(pretty, diagnostics))
    assert len([i for i in items if i.turn is not None]) == 2
    assert diagnostics.skipped_count == 0
