"""Write the golden inputs and the in-process oracle: ``python -m tests.processor.make_testdata``.

For each scenario: ``<name>.traces.jsonl`` (OTLP/JSON lines as the
instrumentation exports them) and ``<name>.findings.json`` (what the
in-process engine found). Claude Code's own log events get
``claude_code_thrashing.logs.jsonl`` and their oracle from the same engine
fed the same observations. The expected processor outputs (``*.tap.json``,
``*.enrich.json``) are written by the golden test with ``UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import CompactionObservation, Finding, TurnObservation
from otel_compaction.otlp.agent_events import derived_compaction_id
from otel_compaction.otlp.decode import encode_json
from otel_compaction.semconv import CompactionMode, CompactionSource
from tests.processor.golden import TESTDATA, spans_to_lines
from tests.processor.scenarios import BASE_NS, SCENARIOS, TURN_NS, render

CC_SESSION = "cc-session-7f3a"
CC_MODEL = "claude-opus-4-1"


def claude_code_events() -> list[tuple[str, dict[str, Any]]]:
    """A Claude Code session that thrashes: the context refills within 3 calls, 4 times."""
    events: list[tuple[str, dict[str, Any]]] = []
    tokens = 20_000
    for _ in range(24):
        tokens += 6_000
        events.append(("api_request", {"input_tokens": 900, "cache_read_tokens": tokens - 900}))
    for _ in range(4):
        sizes = {"pre_tokens": str(tokens), "post_tokens": "62000"}
        events.append(("compaction", {"trigger": "auto", "success": "true", **sizes}))
        tokens = 62_000
        for _ in range(3):
            tokens += 34_000
            events.append(
                ("api_request", {"input_tokens": 1_200, "cache_read_tokens": tokens - 1_200})
            )
    return events


def claude_code_request(events: list[tuple[str, dict[str, Any]]]) -> ExportLogsServiceRequest:
    """Claude Code's log events as its OTLP log exporter sends them (numbers as strings)."""
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    rl.resource.attributes.add(key="service.name", value=AnyValue(string_value="claude-code"))
    scope = rl.scope_logs.add()
    scope.scope.name = "com.anthropic.claude_code.events"
    for i, (name, attrs) in enumerate(events):
        record = scope.log_records.add()
        record.time_unix_nano = BASE_NS + i * TURN_NS
        record.body.string_value = f"claude_code.{name}"
        base = {sc.EVENT_NAME: name, sc.SESSION_ID: CC_SESSION, "event.sequence": str(i)}
        if name == "api_request":
            base[sc.CLAUDE_CODE_MODEL] = CC_MODEL
        for key, value in {**base, **attrs}.items():
            record.attributes.append(KeyValue(key=key, value=AnyValue(string_value=str(value))))
    return request


def claude_code_oracle(events: list[tuple[str, dict[str, Any]]]) -> list[Finding]:
    """What the in-process engine finds in the same session."""
    analyzer = ConversationAnalyzer(CC_SESSION)
    found: list[Finding] = []
    for i, (name, attrs) in enumerate(events):
        ts = (BASE_NS + i * TURN_NS) / 1e9
        if name == "api_request":
            tokens = int(attrs["input_tokens"]) + int(attrs["cache_read_tokens"])
            turn = analyzer.observe_turn(
                TurnObservation(context_tokens=tokens, model=CC_MODEL, timestamp=ts)
            )
            if turn.settled is not None:  # what the size after the compaction decided
                found.extend(turn.settled.findings)
        else:
            found.extend(
                analyzer.observe_compaction(
                    CompactionObservation(
                        source=CompactionSource.IMPORT, mode=CompactionMode.LOSSY,
                        trigger="auto", tokens_before=int(attrs["pre_tokens"]),
                        tokens_after=int(attrs["post_tokens"]), timestamp=ts,
                        summary_tokens=int(attrs["post_tokens"]),
                        compaction_id=derived_compaction_id(CC_SESSION, BASE_NS + i * TURN_NS),
                    )
                ).findings
            )  # fmt: skip
    finished = analyzer.finish()
    if finished is not None:
        found.extend(finished.findings)
    return found


def _write_findings(name: str, findings: list[Finding]) -> None:
    rows = sorted((f.to_json() for f in findings), key=lambda d: json.dumps(d, sort_keys=True))
    (TESTDATA / f"{name}.findings.json").write_text(json.dumps(rows, indent=2) + "\n")


def main() -> None:
    """Regenerate every input and oracle file."""
    TESTDATA.mkdir(exist_ok=True)
    for seed, (name, steps) in enumerate(SCENARIOS.items(), start=1):
        rendered = render(name, steps(), seed)
        lines = spans_to_lines(rendered.spans)
        (TESTDATA / f"{name}.traces.jsonl").write_text("\n".join(lines) + "\n")
        _write_findings(name, rendered.findings)
    events = claude_code_events()
    line = json.dumps(encode_json(claude_code_request(events)), sort_keys=True)
    (TESTDATA / "claude_code_thrashing.logs.jsonl").write_text(line + "\n")
    _write_findings("claude_code_thrashing", claude_code_oracle(events))


if __name__ == "__main__":
    main()
