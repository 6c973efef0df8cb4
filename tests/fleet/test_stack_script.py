"""``scripts/stack``: the whole stack up on loopback, a span through it, and down again."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from otel_compaction import semconv as sc
from tests.dashboards import stack
from tests.dashboards.catalog import load_tool
from tests.fleet.fleet import ROOT, STACK_TOOL

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

SCRIPT = ROOT / "scripts" / "stack"
LIVELOCK = ROOT / "tests" / "processor" / "testdata" / "livelock_004.traces.jsonl"
REPLAY = load_tool("replay")


def _stack(command: str, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [str(SCRIPT), command, "--dir", str(folder), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for init to reap it is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(") ", 1)[1][:1] != "Z"


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _findings_in_jaeger(base: str) -> int | None:
    url = f"{base}/api/traces?service=otel-compaction-processor&limit=100"
    traces = json.loads(stack.http(url))["data"] or []
    spans = [s for t in traces for s in t["spans"] if s["operationName"] == sc.SPAN_FINDING]
    return len(spans) or None


def test_stack_up_carries_a_span_through_and_down_leaves_nothing(tmp_path: Path) -> None:
    """`scripts/stack up` starts all five programs on loopback; a replayed conversation's
    findings reach Jaeger through the Collector and the processor, Prometheus scrapes
    both; `down` stops every process it started and leaves no port listening."""
    ports: dict[str, int] = {}
    while len(set(ports.values())) < len(STACK_TOOL.PORTS):  # free_port may repeat itself
        ports = {name: stack.free_port() for name in STACK_TOOL.PORTS}
    folder = tmp_path / "stack"
    up = _stack("up", folder, *(f"--port={name}={port}" for name, port in ports.items()))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        pids = {name: int((folder / f"{name}.pid").read_text()) for name in STACK_TOOL.ORDER}
        assert _stack("status", folder).returncode == 0
        REPLAY.replay(LIVELOCK, f"http://127.0.0.1:{ports['collector_otlp_http']}")
        jaeger = f"http://127.0.0.1:{ports['jaeger_query_http']}"
        assert stack.wait_for("findings in Jaeger", lambda: _findings_in_jaeger(jaeger)) > 0
        api = stack.PrometheusAPI(ports["prometheus"])
        up_jobs = stack.wait_for("both scrapes", lambda: _scraped(api))
        assert up_jobs == {"otel-collector", "otel-compaction-processor"}
    finally:
        down = _stack("down", folder)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not list(folder.glob("*.pid"))
    assert [name for name, pid in pids.items() if _running(pid)] == []
    assert [name for name, port in ports.items() if _listening(port)] == []
    assert _stack("status", folder).returncode == 1  # nothing runs


def _scraped(api: stack.PrometheusAPI) -> set[str] | None:
    targets = api.get("/api/v1/targets")["activeTargets"]
    jobs = {t["labels"]["job"] for t in targets if t["health"] == "up"}
    return jobs if len(jobs) == 2 else None


def test_stack_refuses_an_unknown_port_name(tmp_path: Path) -> None:
    """A mistyped --port name is refused with the list of names, before anything starts."""
    result = _stack("up", tmp_path, "--port=colector_otlp_grpc=1234")
    assert result.returncode != 0
    assert "collector_otlp_grpc" in result.stderr
    assert not list(tmp_path.glob("*.pid"))
    assert os.listdir(tmp_path) == []
