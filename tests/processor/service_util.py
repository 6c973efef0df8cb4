"""Running a processor service on ephemeral loopback ports inside a test."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otel_compaction.processor.service import ProcessorService
from tests.processor.conftest import make_config


@contextmanager
def running(tmp_path: Path, mode: str = "tap", **sections: dict[str, Any]) -> Iterator[
    tuple[ProcessorService, io.StringIO]
]:  # fmt: skip
    """A started service whose findings go to a ``StringIO``; stopped (drained) on exit."""
    config = make_config(tmp_path, mode, **sections)
    out = io.StringIO()
    service = ProcessorService(config, findings_out=out)
    service.start()
    try:
        yield service, out
    finally:
        service.stop()


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes (bounded, never asserts time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()
