"""Claude Code compaction events without a time: told apart by sequence or content, never
merged, while a true re-send of the same record is still dropped (processor and analyze)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import NumberDataPoint

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.otlp.decode import Signal, parse_json
from otel_compaction.report.build import analyze_files
from tests.processor.conftest import metrics_pipeline

SESSION = "5b1f0e2a-timeless"


def _attr(key: str, value: object) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _record(name: str, sequence: int | None, **attrs: object) -> dict[str, Any]:
    """A log record shaped like the capture's (body = full name, ``event.name`` the short one,
    string figures), with no ``timeUnixNano`` nor ``observedTimeUnixNano``."""
    pairs = [_attr("session.id", SESSION), _attr("event.name", name.split(".", 1)[1])]
    if sequence is not None:
        pairs.append(_attr("event.sequence", sequence))
    pairs += [_attr(k, v) for k, v in attrs.items()]
    return {"body": {"stringValue": name}, "attributes": pairs}


def _request(*records: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [_attr("service.name", "claude-code")]},
                "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code"},
                               "logRecords": list(records)}],
            }
        ]
    }  # fmt: skip


def _compaction(sequence: int | None, pre: int) -> dict[str, Any]:
    return _record(
        sc.CLAUDE_CODE_EVENT_COMPACTION, sequence, trigger="auto", success="true",
        pre_tokens=str(pre), post_tokens="4000",
    )  # fmt: skip


def _call(sequence: int | None, tokens: int) -> dict[str, Any]:
    return _record(
        sc.CLAUDE_CODE_EVENT_API_REQUEST, sequence, model="claude-sonnet-4-5", query_source="sdk",
        input_tokens=tokens, cache_read_tokens=0, cache_creation_tokens=0, output_tokens=100,
    )  # fmt: skip


def _analyzed(tmp_path: Path, *requests: dict[str, Any]) -> int:
    path = tmp_path / "claude-code.logs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    report = analyze_files([path], Settings())
    assert [c.conversation_id for c in report.conversations] == [SESSION]
    return len(report.conversations[0].compactions)


def _processed(tmp_path: Path, *requests: dict[str, Any]) -> int:
    pipeline, reader = metrics_pipeline(tmp_path)
    for request in requests:
        pipeline.submit(Signal.LOGS, parse_json(Signal.LOGS, json.dumps(request).encode()), "http")
        pipeline.step()
    pipeline.drain()
    data = reader.get_metrics_data()
    assert data is not None
    return int(
        sum(
            point.value
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
            if metric.name == sc.METRIC_COMPACTIONS.name
            for point in metric.data.data_points
            if isinstance(point, NumberDataPoint)
        )
    )


SEQUENCED = _request(
    _call(3, 150_000), _compaction(4, 160_000), _call(7, 40_000), _call(9, 150_000),
    _compaction(10, 160_000), _call(12, 41_000),
)  # fmt: skip
"""Two compactions with the same figures and no time, told apart by ``event.sequence``."""

UNSEQUENCED = _request(
    _call(None, 150_000), _compaction(None, 160_000), _call(None, 40_000),
    _compaction(None, 161_500), _call(None, 41_000),
)  # fmt: skip
"""Two compactions with neither time nor sequence, told apart by their figures."""


def test_analyze_keeps_two_timeless_compactions_apart_by_sequence(tmp_path: Path) -> None:
    """Two compactions with equal figures and no time but different sequence numbers count
    as two in analyze."""
    assert _analyzed(tmp_path, SEQUENCED) == 2


def test_analyze_keeps_two_timeless_compactions_apart_by_content(tmp_path: Path) -> None:
    """Without time or sequence, two compactions with different figures count as two."""
    assert _analyzed(tmp_path, UNSEQUENCED) == 2


def test_analyze_drops_a_true_resend_of_a_timeless_compaction(tmp_path: Path) -> None:
    """The same request sent twice (an exporter's retry) still counts two compactions."""
    assert _analyzed(tmp_path, SEQUENCED, SEQUENCED) == 2
    assert _analyzed(tmp_path, UNSEQUENCED, UNSEQUENCED) == 2


def test_the_processor_counts_two_timeless_compactions_once_each(tmp_path: Path) -> None:
    """Through the processor's pipeline, the two compactions without a time are both
    counted, by sequence and by content, and a retried request adds none."""
    assert _processed(tmp_path / "a", SEQUENCED) == 2
    assert _processed(tmp_path / "b", UNSEQUENCED) == 2
    assert _processed(tmp_path / "c", SEQUENCED, SEQUENCED, UNSEQUENCED, UNSEQUENCED) == 4
