"""Whatever sits at the snapshot path, the processor starts, counts it, stops.

A FIFO there used to block start-up forever (and SIGTERM with it); a directory logged a
traceback and was not counted. Only a regular file of bounded size is read now.
"""

from __future__ import annotations

import os
import signal
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from otel_compaction import semconv as sc
from otel_compaction.processor.snapshot import FILE_NAME
from tests.processor.downstream import free_port
from tests.processor.service_util import http_ready, start_process, wait_for

pytestmark = pytest.mark.slow


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("x")


def _symlink_to_fifo(path: Path) -> None:
    target = path.with_name("elsewhere.fifo")
    os.mkfifo(target)
    path.symlink_to(target)


def _symlink_to_device(path: Path) -> None:
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize(
    "make", [_fifo, _directory, _symlink_to_fifo, _symlink_to_device],
    ids=["fifo", "directory", "symlink-to-fifo", "symlink-to-dev-zero"],
)  # fmt: skip
def test_a_snapshot_path_that_is_no_regular_file_is_counted_and_start_up_goes_on(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """The processor listens, counts ``snapshot_discarded{reason="unreadable"}``, logs one warning
    without a traceback, answers SIGTERM, and writes its own snapshot on the way out."""
    state = tmp_path / "state"
    state.mkdir()
    make(state / FILE_NAME)
    admin = free_port()
    config = tmp_path / "processor.yaml"
    config.write_text(yaml.safe_dump({
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{free_port()}"},
        "metrics": {"endpoint": f"127.0.0.1:{admin}"},
        "state": {"directory": str(state)},
    }))  # fmt: skip
    process = start_process(config)
    try:
        started = wait_for(lambda: http_ready(admin), 30)
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=10) as response:
            text = response.read().decode()
        process.send_signal(signal.SIGTERM)
        status = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    err = (tmp_path / "run.err").read_text()
    assert started, err
    name = sc.METRIC_PROCESSOR_SNAPSHOT_DISCARDED.prometheus
    label = f'{sc.prometheus_label(sc.PROCESSOR_SNAPSHOT_REASON)}="unreadable"'
    assert any(line.startswith(name) and label in line and line.endswith(" 1.0")
               for line in text.splitlines())  # fmt: skip
    assert status == 0
    assert "not a regular file" in err
    assert "Traceback" not in err
    assert (state / FILE_NAME).is_file()
