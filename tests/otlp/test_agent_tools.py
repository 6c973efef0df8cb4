"""Claude Code's and Codex's tool events give the processor each compaction's rediscovery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import CompactionObservation, Rediscovery, TurnObservation
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.agent_tools import AgentTools
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import ItemKind
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.semconv import CompactionMode, CompactionSource
from tests.processor.conftest import make_config, queued
from tests.processor.golden import read_requests
from tests.processor.test_golden import CAPTURES, CLAUDE_CODE_CAPTURE

SESSION = "cc-session-1"
RESULT_BYTES = 8_000  # 2,000 tokens


class Session:
    """A Claude Code session's log export, record by record, one request per ``send``."""

    def __init__(self, *, details: bool = True) -> None:
        self.details = details
        self.request = ExportLogsServiceRequest()
        self.time_ns = 1_788_293_241_000_000_000
        self.seq = 0
        self._ids = 0

    def _record(self, name: str, **attrs: str | int) -> None:
        self.time_ns += 10_000_000
        self.seq += 1
        if not self.request.resource_logs:
            self.request.resource_logs.add().scope_logs.add()
        record = self.request.resource_logs[0].scope_logs[0].log_records.add()
        record.time_unix_nano = self.time_ns
        record.body.string_value = f"claude_code.{name}"
        values: dict[str, str | int] = {sc.EVENT_NAME: name, sc.SESSION_ID: SESSION, **attrs}
        values[sc.CLAUDE_CODE_EVENT_SEQUENCE] = self.seq
        for key, value in values.items():
            if isinstance(value, int):
                any_value = AnyValue(int_value=value)
            else:
                any_value = AnyValue(string_value=value)
            record.attributes.append(KeyValue(key=key, value=any_value))

    def response(self, *paths: str, context: int = 20_000) -> None:
        """The agent's request whose response reads ``paths``: each read streams (decision)
        before the request is logged, and its result comes after."""
        ids = []
        for path in paths:
            self._ids += 1
            ids.append((f"toolu_{self._ids:04d}", path))
            self._record("tool_decision", tool_name="Read", tool_use_id=ids[-1][0])
        self._record("api_request", query_source="sdk", input_tokens=2, cache_read_tokens=context)
        for tool_use_id, path in ids:
            extra = {sc.CLAUDE_CODE_TOOL_INPUT: json.dumps({"file_path": path})}
            self._record(
                "tool_result",
                tool_name="Read",
                tool_use_id=tool_use_id,
                tool_result_size_bytes=str(RESULT_BYTES),
                **(extra if self.details else {}),
            )

    def compaction(self) -> None:
        """Claude Code's summarizer request and its compaction."""
        self._record("api_request", query_source="compact", input_tokens=30_000)
        self._record("compaction", trigger="auto", success="true", pre_tokens="30000")

    def send(self) -> ExportLogsServiceRequest:
        """The records since the last send, as one export request."""
        request, self.request = self.request, ExportLogsServiceRequest()
        return request


def scripted(*, details: bool = True) -> list[ExportLogsServiceRequest]:
    """Reads a.py and b.py, greps, compacts, reads a.py and b.py again, then c.py twice."""
    session = Session(details=details)
    session.response("a.py", "b.py")
    session.response("notes.md")
    out = [session.send()]  # a request boundary between a call's decision and result
    session.response()
    session.compaction()
    session.response("a.py")
    out.append(session.send())
    session.response("b.py")
    session.response("c.py")
    session.response("c.py")
    session.response()
    out.append(session.send())
    return out


def run_pipeline(tmp_path: Path, requests: list[ExportLogsServiceRequest]) -> list[dict[str, Any]]:
    """The rediscovery spans a tap pipeline emits for ``requests`` (horizon 4)."""
    config = make_config(tmp_path, "tap", detectors={"rediscovery_horizon": 4})
    assert config.forward.queue.directory is not None
    pipeline = Pipeline(config, queue=PersistentQueue(config.forward.queue.directory))
    for request in requests:
        pipeline.submit(Signal.LOGS, request, "grpc")
    pipeline.step()
    pipeline.drain()
    return [
        {kv.key: kv.value for kv in span.attributes}
        for request in queued(pipeline)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
        if span.name == sc.SPAN_REDISCOVERY
    ]


def test_claude_code_reads_redone_after_a_compaction_reach_the_processors_span(
    tmp_path: Path,
) -> None:
    """With tool details on, the two files read before the compaction and read again in the
    4 calls after it are its rediscovery: 2 calls, 2 x 8,000 bytes / 4 = 4,000 tokens."""
    (span,) = run_pipeline(tmp_path, scripted())
    assert span[sc.REDISCOVERY_CALLS].int_value == 2
    assert span[sc.REDISCOVERY_TOKENS].int_value == 4_000
    assert span[sc.REDISCOVERY_TURNS].int_value == 2
    assert span[sc.REDISCOVERY_HORIZON_TURNS].int_value == 4
    assert [v.string_value for v in span[sc.REDISCOVERY_TOOLS].array_value.values] == ["Read"]


def _on_time() -> tuple[Rediscovery, ...]:
    """The same session as a transcript gives it: each turn with its own calls' inputs."""
    analyzer = ConversationAnalyzer(SESSION, Settings(rediscovery_horizon=4))
    reads = [["a.py", "b.py"], ["notes.md"], [], None, ["a.py"], ["b.py"], ["c.py"], ["c.py"], []]
    closed: list[Rediscovery] = []
    last: list[str] = []
    for paths in reads:
        if paths is None:
            analyzer.observe_compaction(
                CompactionObservation(
                    source=CompactionSource.IMPORT, mode=CompactionMode.LOSSY, tokens_before=30_000
                )
            )
            continue
        obs = TurnObservation(
            context_tokens=20_002,
            tool_calls=tuple("Read" for _ in paths),
            tool_arguments=tuple(json.dumps({"file_path": p}) for p in paths),
            tool_output_tokens=tuple(RESULT_BYTES // 4 for _ in last),
        )
        closed += analyzer.observe_turn(obs).rediscovered
        last = paths
    return (*closed, *analyzer.finish_rediscovery())


def test_the_events_measure_what_the_transcript_measures() -> None:
    """Fed to the engine, the events' late calls give every horizon the figures the same
    calls give when each turn carries its own (a transcript, our spans)."""
    tools = AgentTools()
    analyzer = ConversationAnalyzer(SESSION, Settings(rediscovery_horizon=4))
    closed: list[Rediscovery] = []
    for request in scripted():
        for item in logs_to_items(request, tools):
            if item.kind is ItemKind.TURN and item.turn is not None:
                closed += analyzer.observe_turn(item.turn).rediscovered
            elif item.kind is ItemKind.COMPACTION and item.compaction is not None:
                analyzer.observe_compaction(item.compaction)
    measured = (*closed, *analyzer.finish_rediscovery())
    expected = _on_time()
    assert [(r.start_turn, r.calls, r.tokens, r.turns, r.horizon_turns) for r in measured] == [
        (r.start_turn, r.calls, r.tokens, r.turns, r.horizon_turns) for r in expected
    ]


def test_without_tool_details_rediscovery_is_unknown_not_zero(tmp_path: Path) -> None:
    """Without OTEL_LOG_TOOL_DETAILS no call's input is known: no rediscovery span, and the
    engine keeps no baseline (unknown), rather than a measured zero."""
    assert run_pipeline(tmp_path, scripted(details=False)) == []
    tools = AgentTools()
    analyzer = ConversationAnalyzer(SESSION, Settings(rediscovery_horizon=4))
    for request in scripted(details=False):
        for item in logs_to_items(request, tools):
            if item.kind is ItemKind.TURN and item.turn is not None:
                analyzer.observe_turn(item.turn)
    assert analyzer.rediscovery_baseline is None


def _codex_request(*records: tuple[str, dict[str, str]]) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for i, (name, attrs) in enumerate(records):
        record = scope.log_records.add()
        record.observed_time_unix_nano = 1_788_303_265_000_000_000 + i
        values = {sc.EVENT_NAME: name, sc.CODEX_CONVERSATION_ID: "codex-1", **attrs}
        for key, value in values.items():
            record.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))
    return request


def _completed() -> tuple[str, dict[str, str]]:
    return sc.CODEX_EVENT_SSE, {
        sc.CODEX_EVENT_KIND: sc.CODEX_RESPONSE_COMPLETED,
        sc.CODEX_INPUT_TOKENS: "20000",
        sc.CODEX_OUTPUT_TOKENS: "100",
    }


def test_codex_counts_each_decided_call_once_not_its_exec_wrapper() -> None:
    """A Codex response's exec_command (decided) and the ``exec`` wrapper that ran it (no
    decision) come with the next turn as one call, keyed by its arguments, sized by its
    output's characters / 4."""
    args = json.dumps({"cmd": "uv run pytest", "workdir": "/w"})
    request = _codex_request(
        _completed(),
        (sc.CODEX_EVENT_TOOL_DECISION, {"tool_name": "exec_command", sc.CODEX_CALL_ID: "exec-1"}),
        (
            sc.CODEX_EVENT_TOOL_RESULT,
            {
                "tool_name": "exec_command",
                sc.CODEX_CALL_ID: "exec-1",
                sc.CODEX_TOOL_ARGUMENTS: args,
                sc.CODEX_TOOL_OUTPUT: "y" * 400,
            },
        ),
        (
            sc.CODEX_EVENT_TOOL_RESULT,
            {"tool_name": "exec", sc.CODEX_CALL_ID: "call_1", sc.CODEX_TOOL_OUTPUT: "y" * 400},
        ),
        _completed(),
    )
    first, second = [i.turn for i in logs_to_items(request, AgentTools()) if i.turn is not None]
    assert first.tool_calls == ()
    assert second.tool_calls == ("exec_command",)
    assert second.tool_output_tokens == (100,)
    (key,) = second.tool_keys
    assert key.startswith("<")
    assert len(key) == 17


def test_the_claude_code_capture_measures_no_rediscovery_for_the_reasons_given() -> None:
    """The real S7 capture (docs/processor.md): the 14 Reads of turn 3's response come with
    turn 4; the horizons of the compactions before turns 3 and 4 cover one request each and
    repeat nothing made before them; the last horizon is still open when the events end."""
    tools = AgentTools()
    analyzer = ConversationAnalyzer("s7", Settings())
    closed: list[Rediscovery] = []
    calls: list[tuple[str, ...]] = []
    for _, request in read_requests(CAPTURES / f"{CLAUDE_CODE_CAPTURE}.jsonl"):
        for item in logs_to_items(request, tools):
            if item.kind is ItemKind.TURN and item.turn is not None:
                calls.append(item.turn.tool_calls)
                closed += analyzer.observe_turn(item.turn).rediscovered
            elif item.kind is ItemKind.COMPACTION and item.compaction is not None:
                analyzer.observe_compaction(item.compaction)
    assert calls == [(), ("Bash",), ("Bash",), ("Read",) * 14, ("Bash",)]
    assert [(r.start_turn, r.calls, r.tokens, r.horizon_turns) for r in closed] == [
        (3, 0, 0, 1),
        (4, 0, 0, 1),
    ]
    (still_open,) = analyzer.finish_rediscovery()
    assert still_open.start_turn == 5
