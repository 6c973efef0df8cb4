"""Fixtures of the processor tests: a pipeline wired to a queue in a temporary directory."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_compaction.processor.config import ProcessorConfig, load_config
from otel_compaction.processor.decode import Signal
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue

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
    """Build a pipeline (no threads) whose findings go to a ``StringIO``."""

    def build(mode: str = "tap", **sections: dict[str, Any]) -> tuple[Pipeline, io.StringIO]:
        config = make_config(tmp_path, mode, **sections)
        assert config.forward.queue.directory is not None
        queue = PersistentQueue(config.forward.queue.directory)
        out = io.StringIO()
        return Pipeline(config, queue=queue, findings_out=out), out

    return build


def queued(pipeline: Pipeline) -> list[Any]:
    """The ready batches in the pipeline's queue, decoded, oldest first."""
    assert pipeline.queue is not None
    out = []
    for path in sorted(pipeline.queue.directory.glob("*.ready")):
        signal = next(s for s in Signal if f"-{s.spec.name}-" in path.name)
        out.append(signal.spec.request.FromString(path.read_bytes()))
    return out
