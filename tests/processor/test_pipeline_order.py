"""The pipeline over its ConversationState: order, retries, admission, restart."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import spans_to_items
from otel_compaction.processor.pipeline import Overloaded
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason
from tests.processor.conftest import PipelineFactory, queued, rejections
from tests.processor.golden import TESTDATA, read_requests


def _requests(name: str) -> list[Any]:
    return [r for _, r in read_requests(TESTDATA / f"{name}.traces.jsonl")]


def _oracle(name: str) -> list[dict[str, Any]]:
    return list(json.loads((TESTDATA / f"{name}.findings.json").read_text()))


def _findings(out: Any) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    return sorted(rows, key=lambda d: json.dumps(d, sort_keys=True))


def _spans_one_per_request(name: str) -> list[ExportTraceServiceRequest]:
    out = []
    for request in _requests(name):
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    single = ExportTraceServiceRequest()
                    single.resource_spans.add().scope_spans.add().spans.append(span)
                    out.append(single)
    return out


def test_shuffled_spans_within_the_window_give_the_in_order_verdicts(
    pipeline_factory: PipelineFactory,
) -> None:
    """Spans arriving in random order inside one reorder window are applied in turn order."""
    pipeline, out = pipeline_factory(processing={"reorder_window_seconds": 30.0})
    requests = _spans_one_per_request("livelock_004")
    random.Random(7).shuffle(requests)
    for request in requests:
        pipeline.submit(Signal.TRACES, request, "grpc")
    assert pipeline.step() == 0  # still inside the window
    pipeline.drain()
    assert _findings(out) == _oracle("livelock_004")


def test_a_retried_batch_changes_nothing(
    pipeline_factory: PipelineFactory, processor_metrics: ProcessorMetrics
) -> None:
    """Every batch sent twice (an exporter retry) yields the findings once, duplicates counted."""
    pipeline, out = pipeline_factory(metrics=processor_metrics)
    for request in _requests("boundary_000"):
        for _ in range(2):
            pipeline.submit(Signal.TRACES, request, "http")
            pipeline.step()
    pipeline.drain()
    assert _findings(out) == _oracle("boundary_000")
    skipped = rejections(processor_metrics)
    assert set(skipped) == {ProcessorReason.DUPLICATE.value}
    sent = sum(1 for r in _requests("boundary_000") for _ in spans_to_items(r))
    assert skipped[ProcessorReason.DUPLICATE.value] == sent  # every item of every retry


def test_a_full_window_pushes_back(pipeline_factory: PipelineFactory) -> None:
    """Past ``max_pending_items`` the pipeline raises ``Overloaded`` with a retry delay."""
    pipeline, _ = pipeline_factory(
        processing={"reorder_window_seconds": 5.0, "max_pending_items": 20}
    )
    requests = _requests("healthy")
    pipeline.submit(Signal.TRACES, requests[0], "grpc")
    pipeline.submit(Signal.TRACES, requests[1], "grpc")
    with pytest.raises(Overloaded) as info:
        pipeline.submit(Signal.TRACES, requests[2], "grpc")
    assert info.value.retry_after >= 1
    pipeline.drain()
    pipeline.submit(Signal.TRACES, requests[2], "grpc")  # room again


def test_enrich_mode_releases_batches_in_acceptance_order(
    pipeline_factory: PipelineFactory,
) -> None:
    """Processed requests reach the queue in the order they were accepted, none missing."""
    pipeline, _ = pipeline_factory("enrich", processing={"reorder_window_seconds": 30.0})
    requests = _requests("livelock_004")
    for request in requests:
        pipeline.submit(Signal.TRACES, request, "grpc")
    assert queued(pipeline) == []  # nothing leaves before its spans are applied
    pipeline.drain()
    names = [
        [s.span_id for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
        for r in queued(pipeline)
    ]
    expected = [
        [s.span_id for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
        for r in requests
    ]
    assert names == expected


def test_accepted_raw_batches_are_processed_after_a_restart(
    pipeline_factory: PipelineFactory, tmp_path: Path
) -> None:
    """Raw batches left on disk by a crash are processed by the next pipeline's ``recover``."""
    first, _ = pipeline_factory("enrich", processing={"reorder_window_seconds": 30.0})
    for request in _requests("boundary_000"):
        first.submit(Signal.TRACES, request, "grpc")
    # The process dies here: nothing processed, everything on disk as raw.
    second, out = pipeline_factory("enrich")
    assert second.recover() == len(_requests("boundary_000"))
    second.drain()
    assert _findings(out) == _oracle("boundary_000")
    assert len(queued(second)) == len(_requests("boundary_000"))
