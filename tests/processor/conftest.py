"""Fixtures of the processor tests: a pipeline wired to a queue in a temporary directory."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families

from otel_compaction import semconv as sc
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.bulk import BulkHistogram
from otel_compaction.processor.config import ProcessorConfig, load_config
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.telemetry import ProcessorMetrics

PipelineFactory = Callable[..., tuple[Pipeline, io.StringIO]]


def make_config(tmp_path: Path, mode: str = "tap", **sections: dict[str, Any]) -> ProcessorConfig:
    """A valid config whose queue lives under ``tmp_path`` and whose listeners use port 0."""
    overrides: dict[str, dict[str, Any]] = {
        "receivers": {"otlp_grpc": "127.0.0.1:0", "otlp_http": "127.0.0.1:0"},
        "metrics": {"endpoint": "127.0.0.1:0"},
        "output": {"mode": mode},
        "processing": {"reorder_window_seconds": 0.0},
        "forward": {"endpoint": "127.0.0.1:1", "queue": {"directory": str(tmp_path / "queue")}},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_config(None, overrides)


@pytest.fixture
def pipeline_factory(tmp_path: Path) -> PipelineFactory:
    """Build a pipeline (no threads) whose findings go to a ``StringIO`` (and whose counters
    go to ``metrics``, when given)."""

    def build(
        mode: str = "tap", *, metrics: ProcessorMetrics | None = None, **sections: dict[str, Any]
    ) -> tuple[Pipeline, io.StringIO]:
        config = make_config(tmp_path, mode, **sections)
        assert config.forward.queue.directory is not None
        queue = PersistentQueue(config.forward.queue.directory)
        out = io.StringIO()
        return Pipeline(config, metrics=metrics, queue=queue, findings_out=out), out

    return build


@pytest.fixture
def processor_metrics() -> Iterator[ProcessorMetrics]:
    """The processor's own metrics, read through their Prometheus exposition."""
    metrics = ProcessorMetrics("test", livelocked=lambda: 0, active=lambda: 0, queue_size=lambda: 0)
    yield metrics
    metrics.shutdown()


def rejections(metrics: ProcessorMetrics) -> dict[str, float]:
    """The items the pipeline refused, by reason (the reasons counted at least once)."""
    name = sc.METRIC_PROCESSOR_REJECTED.prometheus
    by_reason: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name and sample.value:
                reason = sample.labels[sc.prometheus_label(sc.PROCESSOR_REASON)]
                by_reason[reason] = by_reason.get(reason, 0.0) + sample.value
    return by_reason


def queued(pipeline: Pipeline) -> list[Any]:
    """The ready batches in the pipeline's queue, decoded, oldest first."""
    assert pipeline.queue is not None
    out = []
    for path in sorted(pipeline.queue.directory.glob("*.ready")):
        signal = next(s for s in Signal if f"-{s.spec.name}-" in path.name)
        out.append(signal.spec.request.FromString(path.read_bytes()))
    return out


def _ignore(*_args: object) -> None:
    return None


def metrics_pipeline(tmp_path: Path) -> tuple[Pipeline, InMemoryMetricReader]:
    """A tap-mode pipeline whose compaction metrics go to an in-memory reader (its own
    counters of received, rejected and dropped items are not looked at)."""
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    compaction = CompactionMetrics(meter)
    turns = BulkHistogram(compaction.token_fraction)
    metrics: Any = SimpleNamespace(
        compaction=compaction,
        record_turn=lambda turn, provider: turns.add(
            turn.pressure.token_fraction, compaction.turn_attributes(provider)
        ),
        flush_turns=turns.flush,
        received=_ignore,
        rejected=_ignore,
        dropped=_ignore,
    )
    config = make_config(tmp_path)
    assert config.forward.queue.directory is not None
    queue = PersistentQueue(config.forward.queue.directory)
    return Pipeline(config, queue=queue, metrics=metrics), reader
