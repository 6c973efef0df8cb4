"""Golden tests in the Collector's style: OTLP/JSON in, findings and spans out.

Each row feeds an input file from ``testdata/`` through the processor's
pipeline and compares the findings with the in-process engine's (the oracle
written by ``make_testdata``) and the output with the expected file, ignoring
timestamps and order: in tap mode the finding spans; in enrich mode the spans
and log records the processor changed (every other one must pass through
unchanged, none lost, none added). ``UPDATE_GOLDEN=1`` rewrites the expected
output files (review the diff).

The real captures of Claude Code's and Codex's own OTLP log export
(``tests/data/otel-captures``) are rows too: their expected findings are not an
oracle's but the verdicts docs/processor.md#claude-code-and-codex-telemetry argues
from the capture's figures, and ``analyze`` must reach the same ones.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.processor.tap import SCOPE_NAME
from tests.processor.conftest import PipelineFactory, queued
from tests.processor.golden import TESTDATA, changed_items, normalize_requests, read_requests


@dataclass(frozen=True)
class Case:
    """One row: input, mode, detector overrides, and the expected files."""

    name: str
    mode: str
    detectors: dict[str, Any] = field(default_factory=dict)
    expect: str = ""
    source: Path = TESTDATA
    """Where the input file is: ``testdata/``, or the captures' folder."""

    @property
    def input(self) -> Path:
        return next(self.source.glob(f"{self.name}*.jsonl"))

    @property
    def stem(self) -> str:
        return self.expect or self.name


CAPTURES = Path(__file__).resolve().parents[1] / "data" / "otel-captures"
CLAUDE_CODE_CAPTURE = "telltale-claude-2.1.257-S7"
CODEX_CAPTURE = "telltale-codex-0.150.1-S1"

CASES = [
    Case("boundary_000", "tap"),
    Case("boundary_000", "enrich"),
    Case("livelock_004", "tap"),
    Case("livelock_004", "enrich"),
    Case("healthy", "tap"),
    Case("healthy", "enrich"),
    Case("claude_code_thrashing", "tap"),
    Case("claude_code_thrashing", "enrich"),
    # The fleet's own thresholds decide: a higher veto clears the boundary finding.
    Case("boundary_000", "tap", {"transition_veto": 0.9}, "boundary_000.veto90"),
    Case("boundary_000", "enrich", {"transition_veto": 0.9}, "boundary_000.veto90"),
    Case(CLAUDE_CODE_CAPTURE, "tap", source=CAPTURES),
    Case(CLAUDE_CODE_CAPTURE, "enrich", source=CAPTURES),
    Case(CODEX_CAPTURE, "tap", source=CAPTURES),
    Case(CODEX_CAPTURE, "enrich", source=CAPTURES),
]


def _load(name: str) -> Any:
    return json.loads((TESTDATA / name).read_text(encoding="utf-8"))


def _run(case: Case, factory: PipelineFactory) -> tuple[list[Any], list[Any]]:
    pipeline, out = factory(case.mode, detectors=case.detectors)
    for signal, request in read_requests(case.input):
        pipeline.submit(signal, request, "http")
        pipeline.step()
    pipeline.drain()
    findings = [json.loads(line) for line in out.getvalue().splitlines()]
    findings.sort(key=lambda d: json.dumps(d, sort_keys=True))
    if case.mode == "tap":
        return findings, normalize_requests(queued(pipeline))
    inputs = [request for _, request in read_requests(case.input)]
    # Findings the size after a compaction decided come after its span or record went on:
    # enrich mode sends them as finding spans, beside the changed items.
    outputs = queued(pipeline)
    late = [r for r in outputs if _is_findings(r)]
    kept = [r for r in outputs if not _is_findings(r)]
    return findings, changed_items(inputs, kept) + normalize_requests(late)


def _is_findings(request: Any) -> bool:
    """Whether ``request`` is one of the processor's own finding-span requests."""
    spans = getattr(request, "resource_spans", ())
    return bool(spans) and all(
        scope.scope.name == SCOPE_NAME for rs in spans for scope in rs.scope_spans
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.stem}-{c.mode}")
def test_golden(case: Case, pipeline_factory: PipelineFactory) -> None:
    """The processor's findings equal the oracle's and its output spans equal the golden file."""
    findings, output = _run(case, pipeline_factory)
    expected_findings = [] if case.expect else _load(f"{case.name}.findings.json")
    assert findings == expected_findings
    golden = TESTDATA / f"{case.stem}.{case.mode}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(output, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert output == _load(golden.name)


def test_oracles_hold_the_findings_the_notes_describe() -> None:
    """The inputs are not vacuous: the incidents are flagged, the healthy run is not."""
    kinds = {
        name: {(f["kind"], f["rule"]) for f in _load(f"{name}.findings.json")}
        for name in ("boundary_000", "livelock_004", "healthy", "claude_code_thrashing")
    }
    assert kinds["boundary_000"] == {("boundary_compaction", "veto")}
    assert ("reexpansion_livelock", "cadence") in kinds["livelock_004"]
    assert kinds["healthy"] == set()
    assert kinds["claude_code_thrashing"] == {("reexpansion_livelock", "thrashing")}
