"""Freed heap handed back to the operating system on the pipeline's schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_compaction.processor import heap
from otel_compaction.processor.pipeline import Pipeline
from tests.processor.conftest import make_config


def _resident() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


@pytest.mark.skipif(not heap.can_release(), reason="the C library has no malloc_trim")
def test_release_returns_freed_pages_the_allocator_kept() -> None:
    """Blocks freed below a live one stay resident until ``release`` hands their pages back."""
    blocks = [bytes(2_000) + bytes([i % 251]) for i in range(40_000)]  # ~80 MB through malloc
    keep = blocks[-1]
    del blocks
    before = _resident()
    assert heap.release()
    assert _resident() < before - 20 * 2**20
    assert keep[-1] == 39_999 % 251


@pytest.mark.parametrize(("every", "expected"), [(30.0, 3), (0.0, 0)])
def test_the_pipeline_trims_on_its_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: float, expected: int
) -> None:
    """Every ``trim_memory_seconds`` of steps, ``release`` once; never with 0."""
    calls: list[int] = []

    def release() -> bool:
        calls.append(1)
        return True

    monkeypatch.setattr(heap, "release", release)
    clock = [0.0]
    config = make_config(tmp_path, processing={"trim_memory_seconds": every})
    pipeline = Pipeline(config, clock=lambda: clock[0])
    for _ in range(100):  # 100 s of steps, one a second
        clock[0] += 1.0
        pipeline.step()
    assert len(calls) == expected
