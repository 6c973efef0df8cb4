"""State across restarts of the real service: SIGTERM, SIGKILL, and a snapshot it refuses."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.processor.snapshot import FILE_NAME, SnapshotRejected, SnapshotStore
from otel_compaction.semconv import SnapshotReason
from tests.processor.downstream import Downstream, free_port
from tests.processor.golden import TESTDATA
from tests.processor.scenarios import SCENARIOS, render
from tests.processor.service_util import (
    export_spans,
    http_ready,
    running,
    start_process,
    wait_for,
)

pytestmark = pytest.mark.slow

CONVERSATION = "conv-livelock_004"


def _livelock_spans() -> tuple[list[Any], list[Any]]:
    """livelock_004's spans before compaction c7 and from it on (turn 64: the first finding)."""
    spans = render("livelock_004", SCENARIOS["livelock_004"](), 2).spans
    at = next(
        i
        for i, span in enumerate(spans)
        if (span.attributes or {}).get(sc.COMPACTION_ID) == f"{CONVERSATION}-c7"
    )
    return spans[:at], spans[at:]


def _config(tmp_path: Path, mode: str, downstream: int) -> tuple[Path, int]:
    port = free_port()
    config = {
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{port}"},
        "metrics": {"endpoint": None},
        "output": {"mode": mode},
        "processing": {"reorder_window_seconds": 0.05},
        "forward": {"endpoint": f"127.0.0.1:{downstream}",
                    "retry": {"initial_interval_seconds": 0.05, "max_interval_seconds": 0.2},
                    "queue": {"directory": str(tmp_path / "queue")}},
        "state": {"directory": str(tmp_path / "state"), "snapshot_interval_seconds": 0.2},
    }  # fmt: skip
    path = tmp_path / "processor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, port


def _findings(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    stdout = (tmp_path / f"{name}.out").read_text()
    found = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    # The oracle file is sorted (make_testdata); findings settled later print later.
    return sorted(found, key=lambda d: json.dumps(d, sort_keys=True))


def _oracle() -> list[dict[str, Any]]:
    return list(json.loads((TESTDATA / "livelock_004.findings.json").read_text()))


def _stop(process: subprocess.Popen[bytes], tmp_path: Path, name: str) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, (tmp_path / f"{name}.err").read_text()


def _mark(store: SnapshotStore) -> int:
    """The turn mark of the livelock conversation in the snapshot on disk (0: not there yet)."""
    try:
        snapshot = store.read()
    except (FileNotFoundError, SnapshotRejected):
        return 0
    return next((e.mark for e in snapshot.entries if e.conversation_id == CONVERSATION), 0)


def test_after_sigterm_a_livelock_finding_comes_on_the_next_compaction(tmp_path: Path) -> None:
    """SIGTERM before compaction c7, restart: c7, c8 and c9 get exactly the no-restart findings."""
    downstream = Downstream(free_port())
    downstream.start()
    config, port = _config(tmp_path, "tap", downstream.port)
    before, after = _livelock_spans()
    first = start_process(config, "first")
    second = None
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, before)
        _stop(first, tmp_path, "first")
        assert _findings(tmp_path, "first") == []
        assert (tmp_path / "state" / FILE_NAME).exists()
        second = start_process(config, "second")
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, after)
        _stop(second, tmp_path, "second")
        assert _findings(tmp_path, "second") == _oracle()
        assert [s.name for s in downstream.spans()] == [sc.SPAN_FINDING] * len(_oracle())
        assert "restored 1 conversations" in (tmp_path / "second.err").read_text()
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
        downstream.stop()


def test_after_sigkill_the_last_periodic_snapshot_is_used_and_no_span_is_lost(
    tmp_path: Path,
) -> None:
    """Enrich mode, SIGKILL once a periodic snapshot holds turn 63: the restarted replica flags
    c7-c9 as without the crash, and every accepted span reaches the next hop."""
    downstream = Downstream(free_port())
    downstream.start()
    config, port = _config(tmp_path, "enrich", downstream.port)
    before, after = _livelock_spans()
    last_turn = max(int((s.attributes or {}).get(sc.TURN_INDEX, 0)) for s in before)
    store = SnapshotStore(tmp_path / "state", Settings())
    first = start_process(config, "first")
    second = None
    try:
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, before)
        assert wait_for(lambda: _mark(store) == last_turn, timeout=30)
        first.kill()
        first.wait(10)
        second = start_process(config, "second")
        assert wait_for(lambda: http_ready(port), timeout=30)
        export_spans(port, after)
        _stop(second, tmp_path, "second")
        assert _findings(tmp_path, "second") == _oracle()
        got = downstream.spans()
        sent = {s.context.span_id.to_bytes(8, "big") for s in before + after}
        assert {s.span_id for s in got} == sent
        flagged = {s.span_id for s in got if any(kv.key == sc.FLAG_LIVELOCK for kv in s.attributes)}
        assert len(flagged) == 3
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
        downstream.stop()


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def _discarded(text: str, reason: str) -> float:
    name = sc.METRIC_PROCESSOR_SNAPSHOT_DISCARDED.prometheus
    label = f'{sc.prometheus_label(sc.PROCESSOR_SNAPSHOT_REASON)}="{reason}"'
    line = next(x for x in text.splitlines() if x.startswith(name + "{") and label in x)
    return float(line.rsplit(" ", 1)[1])


def test_a_corrupt_snapshot_means_a_clean_start_a_warning_and_a_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The service starts with no conversations, logs why and counts the reason; others stay 0."""
    state = tmp_path / "state"
    state.mkdir()
    (state / FILE_NAME).write_bytes(b'{"format": "otel-compaction.engine-state", "ver')
    with (
        caplog.at_level(logging.WARNING),
        running(tmp_path, state={"directory": str(state)}) as (service, _out),
    ):
        assert service.admin is not None
        text = _metrics(service.admin.port)
        assert len(service.pipeline.state.registry) == 0
    assert _discarded(text, "truncated") == 1
    for reason in SnapshotReason:
        if reason is not SnapshotReason.TRUNCATED:
            assert _discarded(text, reason.value) == 0
    assert f"\n{sc.METRIC_PROCESSOR_SNAPSHOT_WRITE_ERRORS.prometheus}{{" in text
    assert "state snapshot not used" in caplog.text
    assert (state / (FILE_NAME + ".rejected")).exists()
    assert SnapshotStore(state, service.pipeline.settings).read().entries == []  # the stop's own
