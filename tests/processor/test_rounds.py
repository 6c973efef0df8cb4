"""A large step applied in rounds: the oldest requests leave first, nothing else changes."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks.processor.payloads import payloads
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import Item, ItemKind
from otel_compaction.processor import rounds as rounds_module
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.rounds import rounds
from tests.processor.conftest import make_config, queued
from tests.processor.test_pipeline_order import _findings, _oracle, _spans_one_per_request


def _item(conversation: str, turn: int, seq: int) -> Item:
    item = Item(conversation, ItemKind.TURN, turn, turn, b"t", b"s", hash((conversation, turn)))
    item.batch = seq
    return item


def _groups(rng: random.Random, late: bool) -> list[tuple[str, list[Item]]]:
    """Twenty conversations, each turn in a request after its previous one's (or, ``late``,
    now and then one request later than the turn after it)."""
    groups = []
    for c in range(20):
        items = []
        seq = rng.randrange(5)
        for turn in range(1, rng.randrange(50, 200)):
            seq += rng.randrange(3)
            items.append(_item(f"c{c}", turn, seq))
        if late:
            for i in range(0, len(items) - 1, 7):
                items[i].batch, items[i + 1].batch = items[i + 1].batch + 1, items[i].batch
        rng.shuffle(items)  # as the window holds them: arrival order, not turn order
        groups.append((f"c{c}", items))
    return groups


@pytest.mark.parametrize("late", [False, True])
def test_every_item_once_in_each_conversations_turn_order(
    late: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rounds_module, "LEAST_ITEMS", 0)
    groups = _groups(random.Random(3), late)
    expected = {c: sorted(items, key=Item.sort_key) for c, items in groups}
    parts = rounds(groups, lambda item: int(item.batch))
    assert 1 < len(parts) <= rounds_module.ROUNDS
    seen: dict[str, list[Item]] = {c: [] for c in expected}
    for part in parts:
        assert len({c for c, _ in part}) == len(part)  # a conversation once a round
        for conversation, items in part:
            seen[conversation] += items
    assert seen == expected


def test_the_first_round_completes_the_oldest_requests() -> None:
    """Without late items, every item of the oldest request is in the first round."""
    groups = _groups(random.Random(5), late=False)
    items = [item for _, group in groups for item in group]
    oldest = min(int(item.batch) for item in items)
    first = rounds(groups, lambda item: int(item.batch))[0]
    assert len(items) >= rounds_module.LEAST_ITEMS
    taken = {id(item) for _, part in first for item in part}
    assert all(id(item) in taken for item in items if item.batch == oldest)
    assert len(taken) < len(items) / 4


def test_a_small_step_is_one_round_in_turn_order() -> None:
    """Under ``LEAST_ITEMS`` the step is one round, its lists sorted all the same (the
    pipeline does not sort them again)."""
    groups = _groups(random.Random(1), late=False)[:2]
    expected = [(c, sorted(items, key=Item.sort_key)) for c, items in groups]
    assert rounds(groups, lambda item: int(item.batch)) == [expected]


def _pipeline(tmp_path: Path, name: str, clock: list[float]) -> tuple[Pipeline, io.StringIO]:
    """An enrich-mode pipeline on the clock ``clock[0]``, with a 30 s window."""
    config = make_config(tmp_path / name, "enrich", processing={"reorder_window_seconds": 30.0})
    assert config.forward.queue.directory is not None
    out = io.StringIO()
    queue = PersistentQueue(config.forward.queue.directory)
    pipeline = Pipeline(config, queue=queue, findings_out=out, clock=lambda: clock[0])
    return pipeline, out


def _requests() -> list[ExportTraceServiceRequest]:
    """Forty agent conversations with compactions, interleaved as a Collector batches them,
    and a conversation whose compactions are flagged (livelock), one span a request."""
    bench = [ExportTraceServiceRequest.FromString(data) for data in payloads(40, turns=40)]
    flagged = _spans_one_per_request("livelock_004")
    return [r for pair in zip(bench, flagged, strict=False) for r in pair] + flagged[len(bench) :]


def _run(pipeline: Pipeline, requests: list[ExportTraceServiceRequest], clock: list[float]) -> Any:
    """Every request in one window, then one step after it closed."""
    for request in requests:
        pipeline.submit(Signal.TRACES, request, "grpc")
    clock[0] += 60.0
    return pipeline.step()


def test_rounds_change_nothing_but_when_requests_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same requests through one step in one pass and in rounds: the same bytes leave,
    in the same order, with the same findings; in rounds, the oldest request was ready
    before the step's last conversation was applied."""
    requests = _requests()
    results = []
    for name, least in (("whole", 10**9), ("rounds", 0)):
        monkeypatch.setattr(rounds_module, "LEAST_ITEMS", least)
        clock = [0.0]
        pipeline, out = _pipeline(tmp_path, name, clock)
        ready_at_apply: list[int] = []
        apply = pipeline.state.apply

        def counting(
            groups: Any, *args: Any, apply: Any = apply, pipeline: Pipeline = pipeline,
            ready: list[int] = ready_at_apply,
        ) -> Any:  # fmt: skip
            ready.append(len(queued(pipeline)))
            return apply(groups, *args)

        monkeypatch.setattr(pipeline.state, "apply", counting)
        assert _run(pipeline, requests, clock) > 0
        written = [r.SerializeToString() for r in queued(pipeline)]
        results.append((written, _findings(out)))
        if least:
            assert ready_at_apply == [0]
        else:
            assert len(ready_at_apply) > 1
            assert ready_at_apply[-1] >= 1
    assert len(results[0][0]) == len(requests)
    assert results[0] == results[1]
    assert any(b"compaction.flag" in data for data in results[0][0])
    assert results[0][1] == _oracle("livelock_004")


def test_shuffled_spans_in_rounds_give_the_in_order_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Late spans (a newer request holding an earlier turn) keep their turn order."""
    monkeypatch.setattr(rounds_module, "LEAST_ITEMS", 0)
    clock = [0.0]
    pipeline, out = _pipeline(tmp_path, "shuffled", clock)
    requests = _spans_one_per_request("livelock_004")
    random.Random(7).shuffle(requests)
    steps: list[int] = []
    apply = pipeline.state.apply

    def counting(groups: Any, *args: Any) -> Any:
        steps.append(len(groups))
        return apply(groups, *args)

    monkeypatch.setattr(pipeline.state, "apply", counting)
    assert _run(pipeline, requests, clock) > 0
    assert len(steps) > 1  # in rounds
    assert _findings(out) == _oracle("livelock_004")
    assert len(queued(pipeline)) == len(requests)
