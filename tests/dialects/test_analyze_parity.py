"""``otel-compaction analyze`` on other instrumentations' OTLP files: the processor's verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction.model import Finding
from otel_compaction.otlp.decode import encode_json
from otel_compaction.report.build import analyze_files
from tests.dialects.runs import judge, run_agent, settings

RUNS = [
    # (instrumentation, venv, api, variant, capture, steps, growing, root span)
    ("genai_official", "genai_official", "openai", "stuck", False, 12, False, False),
    ("openllmetry_openai", "openllmetry", "openai", "healthy", True, 60, True, True),
    ("openinference", "openinference", "openai", "healthy", False, 40, False, True),
]


def _verdicts(findings: list[Finding]) -> list[tuple[str, int, str, str]]:
    return sorted((f.kind.value, f.turn, f.rule, f.reason) for f in findings)


def _write_json_lines(data: bytes, path: Path, per_line: int = 7) -> None:
    """The request as OTLP/JSON lines of ``per_line`` spans, as a file exporter's batches."""
    request = ExportTraceServiceRequest.FromString(data)
    lines = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            spans = list(scope_spans.spans)
            for start in range(0, len(spans), per_line):
                part = ExportTraceServiceRequest()
                rs = part.resource_spans.add(resource=resource_spans.resource)
                ss = rs.scope_spans.add(scope=scope_spans.scope)
                ss.spans.extend(spans[start : start + per_line])
                lines.append(json.dumps(encode_json(part), separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("instrumentation", "venv", "api", "variant", "capture", "steps", "growing", "root"),
    RUNS,
    ids=["official-stuck-no-root", "openllmetry-livelock-content", "openinference-healthy"],
)
def test_analyze_reaches_the_processors_verdicts(
    instrumentation: str,
    venv: str,
    api: str,
    variant: str,
    capture: bool,
    steps: int,
    growing: bool,
    root: bool,
    tmp_path: Path,
) -> None:
    """The same spans as OTLP/JSON lines: analyze finds what the processor's reading finds."""
    data, _ = run_agent(
        instrumentation,
        venv,
        tmp_path,
        api=api,
        variant=variant,
        capture=capture,
        steps=steps,
        growing=growing,
        root_span=root,
    )
    processor = judge(data)
    path = tmp_path / "spans.jsonl"
    _write_json_lines(data, path)
    report = analyze_files([path], settings())
    findings = [f for c in report.conversations for f in c.findings]
    assert _verdicts(findings) == _verdicts(processor.findings)
    assert len(report.conversations) == len(processor.conversations)
    assert sum(len(c.compactions) for c in report.conversations) == len(processor.compactions)
    assert sum(c.turn_count for c in report.conversations) == processor.turns
