"""Running a processor service on ephemeral loopback ports inside a test."""

from __future__ import annotations

import http.client
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_compaction.processor.service import ProcessorService
from tests.processor.conftest import make_config

ROOT = Path(__file__).resolve().parents[2]


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


def start_process(config: Path, name: str = "run") -> subprocess.Popen[bytes]:
    """The processor as a child process; its stdout and stderr go to files beside the config."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (
        open(config.with_name(f"{name}.out"), "wb") as out,
        open(config.with_name(f"{name}.err"), "wb") as err,
    ):
        return subprocess.Popen(
            [sys.executable, "-m", "otel_compaction", "processor", "--config", str(config)],
            stdout=out, stderr=err, env=env,
        )  # fmt: skip


def http_ready(port: int) -> bool:
    """Whether something answers HTTP on ``port``."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        conn.request("GET", "/")
        conn.getresponse().read()
        conn.close()
    except OSError:
        return False
    return True


def export_spans(port: int, spans: list[Any]) -> None:
    """Send ``spans`` over OTLP/HTTP, seven a request, each accepted."""
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    for start in range(0, len(spans), 7):
        assert exporter.export(spans[start : start + 7]) is SpanExportResult.SUCCESS
