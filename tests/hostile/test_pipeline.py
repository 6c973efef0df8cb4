"""No span, value or failure inside the pipeline stops enrich-mode forwarding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.tap import SCOPE_NAME
from otel_compaction.processor.telemetry import ProcessorMetrics
from tests.hostile.inputs import langchain_compaction, trace_request, turn
from tests.processor.conftest import PipelineFactory, make_config, queued, rejections


def _submit(pipeline: Pipeline, request: ExportTraceServiceRequest) -> None:
    pipeline.submit(Signal.TRACES, request, "http", request.SerializeToString())


def _raw_left(pipeline: Pipeline) -> list[str]:
    assert pipeline.queue is not None
    return sorted(p.name for p in pipeline.queue.directory.glob("*.raw"))


def test_a_compaction_size_above_int64_does_not_block_the_queue(
    pipeline_factory: PipelineFactory,
) -> None:
    """A foreign compaction span ("1e30" tokens before) and the batch behind it are forwarded."""
    pipeline, _ = pipeline_factory("enrich")
    bad = trace_request(langchain_compaction("1e30"), seed=1)
    good = trace_request(turn("hostile-2", 1, 1000), seed=2)
    _submit(pipeline, bad)
    _submit(pipeline, good)
    pipeline.step()
    pipeline.drain()
    assert _raw_left(pipeline) == []
    out = queued(pipeline)
    assert len(out) == 2
    span = out[0].resource_spans[0].scope_spans[0].spans[0]
    written = {kv.key: kv.value for kv in span.attributes}
    # The size is no number the engine can use: it is not written back as one.
    assert written[sc.TOKENS_BEFORE].WhichOneof("value") != "int_value"


@pytest.mark.parametrize("text", ["1e30", "-1e30", "9223372036854775808", "inf", "nan"])
def test_numbers_outside_int64_are_no_numbers(text: str) -> None:
    """The lenient coercion reads a value OTLP's int64 cannot hold as absent."""
    assert as_count(text) is None
    assert as_count(float(text)) is None


def test_a_batch_the_pipeline_fails_on_is_forwarded_as_received(
    pipeline_factory: PipelineFactory,
    processor_metrics: ProcessorMetrics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever raises while a batch's flags are written, the batch leaves unchanged, counted."""
    pipeline, _ = pipeline_factory("enrich", metrics=processor_metrics)

    def boom(*_: Any) -> bool:
        raise ValueError("Value out of range")

    monkeypatch.setattr("otel_compaction.processor.results.write_flags", boom)
    bad = trace_request(langchain_compaction(120_000), seed=1)
    _submit(pipeline, bad)
    _submit(pipeline, trace_request(turn("hostile-2", 1, 1000), seed=2))
    pipeline.step()
    assert _raw_left(pipeline) == []
    out = queued(pipeline)
    assert [r.SerializeToString() for r in out[:1]] == [bad.SerializeToString()]
    assert rejections(processor_metrics) == {sc.ProcessorReason.ANALYSIS_ERROR.value: 1}


def test_a_failing_disk_leaves_the_batch_at_the_head_and_health_says_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that cannot be released stays queued, is retried, and ``stuck`` reports it."""
    now = [0.0]
    config = make_config(tmp_path, "enrich")
    assert config.forward.queue.directory is not None
    queue = PersistentQueue(config.forward.queue.directory)
    pipeline = Pipeline(config, queue=queue, clock=lambda: now[0])
    real_complete = queue.complete

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(queue, "complete", full)
    _submit(pipeline, trace_request(turn("hostile-2", 1, 1000), seed=2))
    pipeline.step()
    assert pipeline.oldest_batch_seconds() == 0.0
    now[0] += 3600.0
    pipeline.step()
    assert pipeline.oldest_batch_seconds() == pytest.approx(3600.0)
    monkeypatch.setattr(queue, "complete", real_complete)
    pipeline.step()
    assert pipeline.oldest_batch_seconds() == 0.0
    assert _raw_left(pipeline) == []


def test_a_raw_batch_that_no_longer_parses_is_passed_on_at_restart(tmp_path: Path) -> None:
    """Recovery forwards a corrupt write-ahead file as it is instead of failing every start."""
    config = make_config(tmp_path, "enrich")
    assert config.forward.queue.directory is not None
    queue = PersistentQueue(config.forward.queue.directory)
    queue.put(Signal.TRACES, b"\x0a\xff\xff\xff", 1, ready=False)
    pipeline = Pipeline(config, queue=PersistentQueue(config.forward.queue.directory))
    assert pipeline.recover() == 1
    pipeline.step()
    assert _raw_left(pipeline) == []


# ------------------------------------------------------------------ fuzzing

_KEYS = (
    sc.CONVERSATION_ID, sc.GEN_AI_CONVERSATION_ID, sc.TURN_INDEX, sc.CONTEXT_TOKENS,
    sc.CONTEXT_WINDOW, sc.CONTEXT_NEW_CONTENT_TOKENS, sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_REQUEST_MODEL, sc.TOOL_CALLS, sc.TOOL_OUTPUT_TOKENS,
    sc.TOOL_CATEGORIES, sc.PHASE_NAME, sc.PHASE_SOURCE, sc.PHASE_CONFIDENCE, sc.PHASE_NAMES,
    sc.PHASE_DISTRIBUTION, sc.COMPACTION_ID, sc.COMPACTION_SOURCE, sc.COMPACTION_MODE,
    sc.COMPACTION_TRIGGER, sc.TOKENS_BEFORE, sc.TOKENS_AFTER, sc.TOKENS_SUMMARY,
    sc.TOKENS_RETAINED_TAIL, sc.LINEAGE_PARENT_ID, sc.LINEAGE_GENERATION, sc.SUMMARY_FAILED,
    sc.FLAG_REASON,
)  # fmt: skip
_INT64 = st.integers(-(2**63), 2**63 - 1)
_NUMERIC_TEXT = st.one_of(
    st.integers(-(10**40), 10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e30", "-1e30", "1e308", "1e309", "¹²", "0x10", " 7 ", "", "inf", "nan"]),
)
_SCALAR = st.one_of(
    _INT64.map(lambda n: AnyValue(int_value=n)),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda x: AnyValue(double_value=x)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.one_of(_NUMERIC_TEXT, st.text(max_size=20)).map(lambda s: AnyValue(string_value=s)),
    st.binary(max_size=8).map(lambda b: AnyValue(bytes_value=b)),
    st.just(AnyValue()),
)


def _array(values: list[AnyValue]) -> AnyValue:
    out = AnyValue()
    out.array_value.values.extend(values)
    return out


def _kvlist(values: list[AnyValue]) -> AnyValue:
    out = AnyValue()
    out.kvlist_value.values.extend(KeyValue(key=f"k{i}", value=v) for i, v in enumerate(values))
    return out


_VALUE = st.one_of(
    _SCALAR,
    st.lists(_SCALAR, max_size=4).map(_array),
    st.lists(_SCALAR, max_size=2).map(_kvlist),
)
_SPAN = st.tuples(
    st.sampled_from([sc.SPAN_COMPACTION, "chat m", sc.SPAN_FINDING, "tool"]),
    st.dictionaries(st.sampled_from(_KEYS), _VALUE, max_size=12),
    st.sampled_from(["c1", "c2"]),
)


def _fuzz_request(spans: list[tuple[str, dict[str, AnyValue], str]], seed: int) -> Any:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n, (name, attributes, conversation) in enumerate(spans, start=1):
        span = scope.spans.add(
            name=name, trace_id=bytes([seed % 250 + 1]) * 16, span_id=bytes([seed % 250, n]) * 4,
            start_time_unix_nano=n,
        )  # fmt: skip
        span.attributes.add(key=sc.CONVERSATION_ID, value=AnyValue(string_value=conversation))
        span.attributes.extend(KeyValue(key=k, value=v) for k, v in attributes.items())
    return request


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_SPAN, min_size=1, max_size=6), min_size=1, max_size=5))
def test_any_attribute_values_leave_every_batch_forwarded(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[Any]]
) -> None:
    """Fuzzed attribute types and values: the pipeline never raises and releases every batch."""
    tmp = tmp_path_factory.mktemp("fuzz")
    config = make_config(tmp, "enrich")
    assert config.forward.queue.directory is not None
    pipeline = Pipeline(config, queue=PersistentQueue(config.forward.queue.directory))
    sent = []
    for seed, spans in enumerate(batches):
        request = _fuzz_request(spans, seed)
        sent.append(request)
        _submit(pipeline, request)
        pipeline.step()
    pipeline.drain()
    assert _raw_left(pipeline) == []
    # Findings settled after their span left come as finding spans: not forwarded requests.
    out = [r for r in queued(pipeline) if not _findings_only(r)]
    assert len(out) == len(sent)
    for before, after in zip(sent, out, strict=True):
        names = [s.name for s in after.resource_spans[0].scope_spans[0].spans]
        assert names == [s.name for s in before.resource_spans[0].scope_spans[0].spans]


_LOG_KEYS = (
    sc.SESSION_ID, sc.CLAUDE_CODE_MODEL, sc.CLAUDE_CODE_INPUT_TOKENS,
    sc.CLAUDE_CODE_CACHE_READ_TOKENS, sc.CLAUDE_CODE_CACHE_CREATION_TOKENS,
    sc.CLAUDE_CODE_TRIGGER, sc.CLAUDE_CODE_SUCCESS, sc.CLAUDE_CODE_PRE_TOKENS,
    sc.CLAUDE_CODE_POST_TOKENS,
)  # fmt: skip
_RECORD = st.tuples(
    st.sampled_from([sc.CLAUDE_CODE_EVENT_COMPACTION, sc.CLAUDE_CODE_EVENT_API_REQUEST]),
    st.dictionaries(st.sampled_from(_LOG_KEYS), _VALUE, max_size=9),
    st.integers(0, 2**64 - 1),
)


def _fuzz_logs(records: list[tuple[str, dict[str, AnyValue], int]]) -> Any:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for name, attributes, time_ns in records:
        record = scope.log_records.add(event_name=name, time_unix_nano=time_ns)
        record.attributes.add(key=sc.SESSION_ID, value=AnyValue(string_value="s1"))
        record.attributes.extend(KeyValue(key=k, value=v) for k, v in attributes.items())
    return request


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_RECORD, min_size=1, max_size=6), min_size=1, max_size=4))
def test_any_claude_code_event_values_leave_every_batch_forwarded(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[Any]]
) -> None:
    """Fuzzed Claude Code log events: no raise, every batch released, every record kept."""
    tmp = tmp_path_factory.mktemp("fuzz-logs")
    config = make_config(tmp, "enrich")
    assert config.forward.queue.directory is not None
    pipeline = Pipeline(config, queue=PersistentQueue(config.forward.queue.directory))
    for records in batches:
        request = _fuzz_logs(records)
        pipeline.submit(Signal.LOGS, request, "grpc", request.SerializeToString())
        pipeline.step()
    pipeline.drain()
    assert _raw_left(pipeline) == []
    # Findings settled after their record left come as finding spans: not forwarded logs.
    out = [r for r in queued(pipeline) if hasattr(r, "resource_logs")]
    assert [len(r.resource_logs[0].scope_logs[0].log_records) for r in out] == [
        len(b) for b in batches
    ]


def _findings_only(request: Any) -> bool:
    """Whether ``request`` is one of the processor's own finding-span requests."""
    spans = getattr(request, "resource_spans", ())
    return bool(spans) and all(
        scope.scope.name == SCOPE_NAME for rs in spans for scope in rs.scope_spans
    )
