"""The processor's per-turn histogram handed to the SDK in bulk equals one record per turn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.version import __version__ as _SDK_VERSION
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client import CollectorRegistry, generate_latest

from otel_compaction import semconv as sc
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.model import PhaseEstimate, Pressure, TurnAnalysis
from otel_compaction.processor import bulk as bulk_module
from otel_compaction.processor.bulk import BulkHistogram
from otel_compaction.semconv import PhaseSource

PHASE = PhaseEstimate("patch", 0.63, 0.61, 0.42, PhaseSource.INFERRED, (0.1, 0.2, 0.63, 0.07))


class Side:
    """One meter provider with a Prometheus and an in-memory reader, and its metrics."""

    def __init__(self, **provider: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.memory = InMemoryMetricReader()
        prometheus = PrometheusMetricReader(registry=self.registry)
        self.provider = MeterProvider(
            metric_readers=[prometheus, self.memory],
            resource=Resource.create({"service.name": "t"}),
            **provider,
        )
        self.metrics = CompactionMetrics(self.provider.get_meter("t"))

    def exposition(self) -> str:
        """The Prometheus text of every metric."""
        return generate_latest(self.registry).decode()

    def points(self) -> list[dict[str, Any]]:
        """The token-fraction data points as the OTLP exporter would see them (times left out)."""
        data = self.memory.get_metrics_data()
        assert data is not None
        out = []
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != sc.METRIC_TOKEN_FRACTION.name:
                        continue
                    for p in metric.data.data_points:
                        assert isinstance(p, HistogramDataPoint)
                        out.append({
                            "attributes": dict(p.attributes or {}), "count": p.count,
                            "sum": p.sum, "buckets": tuple(p.bucket_counts), "min": p.min,
                            "max": p.max, "bounds": tuple(p.explicit_bounds),
                            "exemplars": [(e.trace_id, e.span_id, e.value) for e in p.exemplars],
                        })  # fmt: skip
        return sorted(out, key=lambda p: sorted(p["attributes"].items()))


def _turns() -> Iterator[tuple[TurnAnalysis, str | None]]:
    """Turns of three providers (one unnamed), fractions across every bucket and on bounds."""
    bounds = list(sc.METRIC_TOKEN_FRACTION.buckets or ())
    values = [*bounds, *(i / 97 for i in range(1, 140)), 0.0, 3.5, 0.1 + 0.2]
    providers = ("anthropic", "openai", None)
    for n, value in enumerate(values):
        pressure = Pressure(int(value * 200_000), 200_000, value, 0.0)
        yield TurnAnalysis("c", n, pressure, PHASE), providers[n % 3]


def _record_both(one_by_one: Side, bulk: Side, steps: int) -> None:
    batch = BulkHistogram(bulk.metrics.token_fraction)
    for n, (turn, provider) in enumerate(_turns()):
        one_by_one.metrics.record_turn(turn, provider)
        batch.add(turn.pressure.token_fraction, bulk.metrics.turn_attributes(provider))
        if n % steps == 0:
            batch.flush()
    batch.flush()


def test_bulk_exports_the_same_series_as_one_record_per_turn() -> None:
    """Prometheus text and OTLP points (count, sum, buckets, min, max, labels) are identical."""
    one_by_one, bulk = Side(), Side()
    _record_both(one_by_one, bulk, steps=17)
    assert bulk.points() == one_by_one.points()
    assert sum(p["count"] for p in bulk.points()) == len(list(_turns()))
    assert bulk.exposition() == one_by_one.exposition()
    # Collected again after more turns (cumulative): still the same.
    _record_both(one_by_one, bulk, steps=5)
    assert bulk.exposition() == one_by_one.exposition()
    assert bulk.points() == one_by_one.points()


def test_values_whose_exemplar_would_be_sampled_are_recorded_one_by_one() -> None:
    """With a filter that samples (always_on), the bulk path keeps the exemplars record would."""
    one_by_one = Side(exemplar_filter=AlwaysOnExemplarFilter())
    bulk = Side(exemplar_filter=AlwaysOnExemplarFilter())
    context = SpanContext(7, 9, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with trace.use_span(NonRecordingSpan(context)):
        _record_both(one_by_one, bulk, steps=10)
    exemplars = [p["exemplars"] for p in bulk.points()]
    assert all(exemplars)
    assert [[e[:2] for e in x] for x in exemplars] == [
        [e[:2] for e in x] for x in (p["exemplars"] for p in one_by_one.points())
    ]
    assert [p["count"] for p in bulk.points()] == [p["count"] for p in one_by_one.points()]


def test_values_the_sdk_refuses_are_left_to_it() -> None:
    """A negative fraction is refused as ``record`` refuses it; the others still count."""
    one_by_one, bulk = Side(), Side()
    batch = BulkHistogram(bulk.metrics.token_fraction)
    attributes = bulk.metrics.turn_attributes("anthropic")
    for value in (0.5, -0.25, 0.75):
        pressure = Pressure(1, 2, value, 0.0)
        one_by_one.metrics.record_turn(TurnAnalysis("c", 1, pressure, PHASE), "anthropic")
        batch.add(value, attributes)
    batch.flush()
    assert [p["count"] for p in bulk.points()] == [2]
    assert bulk.points() == one_by_one.points()


def test_the_merge_is_taken_under_the_release_it_was_read_against(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under the installed SDK (a release in ``MERGED_SDK_RELEASES``) no value goes through
    ``record``, so the equality above compares the merge, not the fallback."""
    assert _SDK_VERSION.startswith(bulk_module.MERGED_SDK_RELEASES)
    side = Side()
    recorded: list[float] = []
    monkeypatch.setattr(
        side.metrics.token_fraction, "record", lambda v, *a, **k: recorded.append(v)
    )
    batch = BulkHistogram(side.metrics.token_fraction)
    batch.add(0.5, side.metrics.turn_attributes("anthropic"))
    batch.flush()
    assert recorded == []
    assert [p["count"] for p in side.points()] == [1]


def test_another_release_records_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the private pieces (another SDK release) every value goes through ``record``."""
    monkeypatch.setattr(bulk_module, "_HISTOGRAM", None)
    one_by_one, bulk = Side(), Side()
    _record_both(one_by_one, bulk, steps=7)
    assert bulk.points() == one_by_one.points()
