"""Per-conversation state: reorder window, de-duplication, late spans, bounds, admission."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction.config import Settings
from otel_compaction.processor.decode import Signal
from otel_compaction.processor.extract import spans_to_items
from otel_compaction.processor.pipeline import Overloaded
from otel_compaction.processor.state import ConversationState, RecentKeys, ReorderWindow
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason
from tests.processor.conftest import PipelineFactory, queued, rejections
from tests.processor.golden import TESTDATA, read_requests


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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


def test_a_replayed_compaction_is_not_counted_twice_after_dedupe_memory_forgets() -> None:
    """A compaction id the engine already recorded is a duplicate even with no span-id memory."""
    state = ConversationState(Settings(), window=0.0, dedupe_memory=0)
    request = _requests("boundary_000")
    items = [i for r in request for i in spans_to_items(r)]
    state.offer(items)
    first = state.step()
    state.offer([i for r in request for i in spans_to_items(r)])
    second = state.step()
    assert sum(a.compaction is not None for a in first) == 1
    assert not any(a.compaction is not None for a in second)
    assert not any(a.turn is not None for a in second)  # all late: turns already applied


def test_a_turn_older_than_the_conversation_is_late() -> None:
    """A turn whose index the conversation already passed is skipped as late, and counted."""
    skipped: list[ProcessorReason] = []
    state = ConversationState(
        Settings(), window=0.0, on_skip=lambda item, reason: skipped.append(reason)
    )
    items = [i for r in _requests("healthy") for i in spans_to_items(r)]
    turns = [i for i in items if i.turn is not None]
    state.offer(turns[5:10])
    state.step()
    state.offer(turns[2:3])
    assert state.step() == []
    assert skipped == [ProcessorReason.LATE]


def test_the_window_holds_items_until_it_closes() -> None:
    """Items wait ``window`` seconds from the first one of their conversation, then apply."""
    clock = Clock()
    state = ConversationState(Settings(), window=2.0, clock=clock)
    items = [i for r in _requests("healthy") for i in spans_to_items(r)]
    state.offer(items[:3])
    clock.now += 1.5
    state.offer(items[3:6])
    assert state.step() == []
    clock.now += 0.6
    assert len(state.step()) == 6
    assert state.pending == 0


def test_reorder_window_releases_conversations_in_arrival_order() -> None:
    """The earliest conversation's window closes first; later ones keep waiting."""
    window = ReorderWindow(1.0)
    items = [i for r in _requests("healthy") for i in spans_to_items(r)][:2]
    items[1].conversation_id = "other"
    window.add(items[:1], 0.0)
    window.add(items[1:], 0.5)
    assert [cid for cid, _ in window.due(1.2)] == [items[0].conversation_id]
    assert len(window) == 1


def test_recent_keys_forget_the_oldest() -> None:
    """The dedupe memory is bounded and forgets in arrival order."""
    keys = RecentKeys(2)
    assert keys.add(1)
    assert keys.add(2)
    assert not keys.add(1)
    assert keys.add(3)
    assert keys.add(1)  # 1 was forgotten when 3 came
    assert len(keys) == 2


def test_conversation_count_is_bounded() -> None:
    """More conversations than ``max_conversations`` evict the least recent."""
    state = ConversationState(Settings(max_conversations=10), window=0.0)
    items = [i for r in _requests("healthy") for i in spans_to_items(r) if i.turn is not None]
    for n, item in enumerate(items[:40]):
        item.conversation_id = f"c{n}"
        item.turn_index = 1
    state.offer(items[:40])
    state.step()
    assert len(state.registry) == 10


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
