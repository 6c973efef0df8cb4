"""The compaction metrics recorded in bulk, once per step, equal one record per compaction."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client import CollectorRegistry, generate_latest

from otel_compaction import semconv as sc
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionRecord,
    Cycle,
    Finding,
    PhaseTransition,
    Rediscovery,
)
from otel_compaction.processor.bulk import BulkRecords
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind

SOURCES = (CompactionSource.EXPLICIT, CompactionSource.INFERRED)
MODES = (CompactionMode.LOSSY, CompactionMode.PRUNE)


class Side:
    """A meter provider (Prometheus and in-memory readers, the default exemplar filter)."""

    def __init__(self, bulk: BulkRecords | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.memory = InMemoryMetricReader()
        self.provider = MeterProvider(
            metric_readers=[PrometheusMetricReader(registry=self.registry), self.memory],
            resource=Resource.create({"service.name": "t"}),
        )
        self.metrics = CompactionMetrics(self.provider.get_meter("t"))
        if bulk is not None:
            self.metrics.hold_records(bulk.instrument)

    def exposition(self) -> str:
        """The Prometheus text of every metric."""
        return generate_latest(self.registry).decode()

    def points(self) -> dict[tuple[str, tuple[tuple[str, Any], ...]], dict[str, Any]]:
        """Every data point as the OTLP exporter sees it (times left out), by metric and
        labels; exemplars as (trace id, span id, value)."""
        data = self.memory.get_metrics_data()
        assert data is not None
        out = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for p in metric.data.data_points:
                        point: dict[str, Any] = {
                            "exemplars": [(e.trace_id, e.span_id, e.value) for e in p.exemplars]
                        }
                        if isinstance(p, HistogramDataPoint):
                            point.update(count=p.count, sum=p.sum, buckets=tuple(p.bucket_counts),
                                         min=p.min, max=p.max)  # fmt: skip
                        else:
                            point.update(value=getattr(p, "value", None))
                        labels = tuple(sorted((p.attributes or {}).items()))
                        out[metric.name, labels] = point
        return out


def _context(n: int) -> Context:
    span = SpanContext(1000 + n, 1 + n, is_remote=True, trace_flags=TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(span))


def _analyses() -> Iterator[CompactionAnalysis]:
    """Compactions of two sources and modes, with and without a cycle, findings, sizes."""
    for n in range(60):
        record = CompactionRecord(
            f"c{n}", "conv", 10 * n, SOURCES[n % 2], MODES[n // 2 % 2], "auto",
            100_000 + 997 * n, None if n % 7 == 0 else 30_000 + 13 * n, None, None, None, None,
            None, "c0", n % 5, None if n % 3 == 0 else Cycle(n % 11 + 1, 500 * n, 40 * n, 7 * n),
            None if n % 4 == 0 else n / 61,
        )  # fmt: skip
        findings = tuple(
            Finding(kind, "conv", f"c{n}", 10 * n, "r") for kind in list(FindingKind)[: n % 3]
        )
        yield CompactionAnalysis(record, None, None, findings)


def _record_both(one: Side, bulk_side: Side, bulk: BulkRecords, step: int) -> None:
    for n, analysis in enumerate(_analyses()):
        for side in (one, bulk_side):
            side.metrics.record_compaction(analysis, context=_context(n))
            if n % 5 == 0:
                transition = PhaseTransition("explore", "patch", n, 0.5)
                side.metrics.record_transition(transition, "inferred", context=_context(n))
                side.metrics.record_rediscovery(Rediscovery(n, f"c{n}", 2, 300 * n, 1, 20),
                                                context=_context(n))  # fmt: skip
        if n % step == 0:
            bulk.flush()
    bulk.flush()


def _same_but_counter_exemplars(bulk: dict[Any, Any], one: dict[Any, Any]) -> None:
    """Every point equal; a counter's exemplars (a random sample of its values, in the SDK)
    as many, each one of the values offered, with its span."""
    assert bulk.keys() == one.keys()
    for key, point in one.items():
        if "buckets" in point:
            assert bulk[key] == point, key
            continue
        assert bulk[key]["value"] == point["value"], key
        assert len(bulk[key]["exemplars"]) == len(point["exemplars"]), key
        for trace_id, span_id, value in bulk[key]["exemplars"]:
            assert (trace_id - 1000, value) == (span_id - 1, 1), key


def test_bulk_compaction_metrics_give_the_same_series_as_one_record_each() -> None:
    """Prometheus text and OTLP points (counts, sums, buckets, min, max, labels, the
    histograms' exemplars with their trace and span ids) are those of one record each."""
    random.seed(7)
    bulk = BulkRecords()
    one, bulk_side = Side(), Side(bulk)
    _record_both(one, bulk_side, bulk, step=9)
    assert bulk_side.exposition() == one.exposition()
    points = one.points()
    assert sum(bool(p["exemplars"]) for p in points.values() if "buckets" in p) >= 10
    _same_but_counter_exemplars(bulk_side.points(), points)
    # Collected again after more (cumulative): still the same.
    _record_both(one, bulk_side, bulk, step=4)
    assert bulk_side.exposition() == one.exposition()
    _same_but_counter_exemplars(bulk_side.points(), one.points())


def test_nothing_is_recorded_before_the_flush_and_everything_after() -> None:
    """A held record reaches no reader until ``flush``; then it is counted once."""
    bulk = BulkRecords()
    side = Side(bulk)
    analysis = next(_analyses())
    side.metrics.record_compaction(analysis, context=_context(0))
    before = side.points()
    bulk.flush()
    after = side.points()
    labels = ((sc.COMPACTION_MODE, "lossy"), (sc.COMPACTION_SOURCE, "explicit"))
    key = (sc.METRIC_COMPACTIONS.name, labels)
    assert before.get(key, {}).get("value", 0) == 0
    assert after[key]["value"] == 1
    bulk.flush()
    assert side.points()[key]["value"] == 1


def test_values_the_sdk_refuses_are_left_to_it() -> None:
    """A negative histogram value is refused (and warned of) by the SDK as one record
    would be; the values of other series still merge."""
    bulk = BulkRecords()
    one, bulk_side = Side(), Side()
    direct = one.provider.get_meter("t").create_histogram("h")
    held = bulk.instrument(bulk_side.provider.get_meter("t").create_histogram("h"))
    for value, source in ((1, "explicit"), (-1, "explicit"), (2, "explicit"), (3, "inferred")):
        held.record(value, {sc.COMPACTION_SOURCE: source})
        direct.record(value, {sc.COMPACTION_SOURCE: source})
    bulk.flush()
    assert bulk_side.exposition() == one.exposition()
    assert bulk_side.points() == one.points()
