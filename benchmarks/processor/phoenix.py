"""Arize Phoenix, an optional and bounded peer of the processor benchmark.

    benchmarks/run processor --install-phoenix   # its own venv in the cache, 2-5 min
    benchmarks/run processor                     # measures it when installed

What a user would otherwise pick to collect and look at LLM spans in Python. Phoenix
is a store, not a forwarder, so it is measured on its own terms: the same OTLP/gRPC
requests (the first ``REQUESTS`` of the all-GenAI payload's first pass) sent to
``phoenix serve`` pinned to the systems' core, and its CPU time from the first send
until its database holds every span (``SELECT count(*) FROM spans`` on its SQLite
file); its resident memory once started and idle. Only the first pass, and no
warm-up: Phoenix keys spans by span id alone, and a later pass renames trace ids
only, so it would drop every span of it as already stored (and the figure would be
its skip path). Bounded: ``START_TIMEOUT`` to start, ``INGEST_TIMEOUT`` to store.

The environment lives beside the framework ones (``tests/frameworks/venvs.py``'s
cache folder), ``arize-phoenix`` pinned to ``VERSION``; when it is missing the
benchmark prints so and goes on without Phoenix.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
import venv
from pathlib import Path
from typing import Any

import grpc

from benchmarks.processor.otlp_harness import EXPORT, cpu_seconds
from benchmarks.processor.payloads import count_spans, tagged

VERSION = "20.26.1"
REQUESTS = 4
START_TIMEOUT = 180.0
INGEST_TIMEOUT = 120.0
INSTALL_HINT = "benchmarks/run processor --install-phoenix"


def venv_dir() -> Path:
    """Where Phoenix's environment lives (outside the checkout, shared by clones)."""
    base = os.environ.get("OTEL_COMPACTION_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "otel-compaction"
    )
    return Path(base) / "venvs" / f"phoenix-{VERSION}"


def interpreter() -> Path | None:
    """Phoenix's Python when its environment was installed whole, else None."""
    python = venv_dir() / "bin" / "python"
    return python if (venv_dir() / "installed").exists() and python.exists() else None


def install() -> Path:
    """Build the environment in a temporary folder and rename it into place."""
    target = venv_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
    try:
        venv.create(work, with_pip=True)
        subprocess.run([str(work / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", f"arize-phoenix=={VERSION}"],
                       check=True)  # fmt: skip
        (work / "installed").write_text(VERSION)
        shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / "bin" / "python"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _stored(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as db:
            count: int = db.execute("SELECT count(*) FROM spans").fetchone()[0]
            return count
    except sqlite3.Error:  # not created yet, or locked for a moment
        return 0


def _started(process: subprocess.Popen[bytes], http: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"Phoenix did not start within {START_TIMEOUT:.0f} s")


def _ingest(process: subprocess.Popen[bytes], grpc_port: int, bodies: list[bytes],
            database: Path) -> dict[str, Any]:  # fmt: skip
    spans = count_spans(bodies)
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=60)
        export = channel.unary_unary(EXPORT)
        cpu0, t0 = cpu_seconds(process.pid), time.monotonic()
        for body in bodies:
            export(body, timeout=60)
        deadline = time.monotonic() + INGEST_TIMEOUT
        while (stored := _stored(database)) < spans and time.monotonic() < deadline:
            time.sleep(0.1)
        cpu, wall = cpu_seconds(process.pid) - cpu0, time.monotonic() - t0
    row: dict[str, Any] = {"spans": spans, "stored": stored, "seconds": wall}
    if stored == spans:  # a rate only when every span is there
        row.update(spans_per_s=spans / wall, spans_per_cpu_s=spans / max(cpu, 1e-9))
    return row


def measure(data: list[bytes], core: int) -> dict[str, Any] | None:
    """One bounded Phoenix run on ``core``, or None (with a message) when not installed."""
    python = interpreter()
    if python is None:
        print(f"Phoenix not installed ({venv_dir()}): skipped; install with {INSTALL_HINT}")
        return None
    http, grpc_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory(prefix="phoenix-") as tmp:
        env = {**os.environ, "PHOENIX_WORKING_DIR": tmp, "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(http), "PHOENIX_GRPC_PORT": str(grpc_port),
               "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
        env.pop("PYTHONPATH", None)
        with open(Path(tmp) / "phoenix.log", "wb") as log:
            argv = ["taskset", "-c", str(core), str(python), "-m", "phoenix.server.main", "serve"]
            process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                _started(process, http)
                time.sleep(2)  # idle: its start-up work done
                idle = _rss_mib(process.pid)
                bodies = [tagged(body, 1, n) for n, body in enumerate(data[:REQUESTS])]
                row = _ingest(process, grpc_port, bodies, Path(tmp) / "phoenix.db")
            finally:
                process.terminate()
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
    return {**row, "idle_rss_mib": idle, "version": VERSION}
