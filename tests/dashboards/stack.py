"""Real processes on loopback for the end-to-end test: the processor, Prometheus, Alertmanager.

Each runs from its own argv in a temporary directory, is waited for until its
readiness endpoint answers, and is terminated (then killed) by its own pid.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from tests.dashboards.catalog import ALERTMANAGER_CONFIG, RULE_FILES, tool

T = TypeVar("T")
TIMEOUT = 60.0
_RFC3339 = re.compile(r"(?P<head>[^.Z+]+?)(?P<frac>\.\d+)?(?P<zone>Z|[+-]\d\d:\d\d)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http(url: str, body: bytes | None = None, content_type: str = "application/json") -> bytes:
    """GET (or POST ``body``) a loopback URL and return the response body."""
    request = urllib.request.Request(url, data=body)  # noqa: S310 - loopback http only
    if body is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback http only
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as err:
        err.close()  # it holds the connection (a 503 from /readyz while starting)
        raise


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = TIMEOUT) -> T:
    """Poll ``probe`` until it returns something other than None (or fail after ``timeout``)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = probe()
        except OSError as exc:  # not listening yet, or a transient HTTP error
            last_error = exc
        else:
            if result is not None:
                return result
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what} (last error: {last_error})")


@contextmanager
def process(argv: list[str], cwd: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` with output in ``log``; terminate it (by pid) on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def processor_argv(http_port: int, metrics_port: int) -> list[str]:
    """The processor on loopback: OTLP/HTTP and /metrics on the given ports, gRPC anywhere."""
    return [
        sys.executable,
        "-m",
        "otel_compaction",
        "processor",
        "--otlp-grpc",
        "127.0.0.1:0",
        "--otlp-http",
        f"127.0.0.1:{http_port}",
        "--metrics",
        f"127.0.0.1:{metrics_port}",
    ]


def prometheus_config(path: Path, metrics_port: int, alertmanager_port: int) -> None:
    """A Prometheus config: 1 s scrape and evaluation, our rule files, our Alertmanager."""
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in RULE_FILES],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]
        },
        "scrape_configs": [
            {
                "job_name": "otel-compaction-processor",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
            }
        ],
    }
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML


def prometheus_argv(config: Path, data: Path, port: int) -> list[str]:
    """Debian's prometheus on loopback with a throw-away TSDB."""
    return [
        tool("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]


def alertmanager_argv(data: Path, port: int) -> list[str]:
    """Debian's Alertmanager with our example config, clustering off."""
    return [
        tool("prometheus-alertmanager"),
        f"--config.file={ALERTMANAGER_CONFIG}",
        f"--storage.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]


class PrometheusAPI:
    """The few calls of Prometheus's HTTP API the test needs."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> Any:
        """The ``data`` of a successful API response."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        body = json.loads(http(f"{self.base}{path}{query}"))
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant-vector result of ``expr`` now."""
        data = self.get("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", (expr, data["resultType"])
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """The range-vector result of ``expr`` from ``start`` to ``end`` (seconds)."""
        data = self.get(
            "/api/v1/query_range", query=expr, start=str(start), end=str(end), step=str(step)
        )
        assert data["resultType"] == "matrix", (expr, data["resultType"])
        result: list[dict[str, Any]] = data["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """Active (pending or firing) alerts."""
        alerts: list[dict[str, Any]] = self.get("/api/v1/alerts")["alerts"]
        return alerts

    def firing(self, name: str, **labels: str) -> dict[str, Any] | None:
        """The firing alert ``name`` (with ``labels``, when given), if Prometheus has one."""
        return next(
            (
                a
                for a in self.alerts()
                if a["labels"]["alertname"] == name
                and a["state"] == "firing"
                and labels.items() <= a["labels"].items()
            ),
            None,
        )

    def evaluations_after(self, since: float) -> bool:
        """Whether every rule group has been evaluated at least once after ``since``."""
        groups = self.get("/api/v1/rules")["groups"]
        return bool(groups) and all(_timestamp(g["lastEvaluation"]) > since for g in groups)


def alertmanager_receivers(port: int, name: str, **labels: str) -> list[str] | None:
    """The receivers Alertmanager routed alert ``name`` (with ``labels``) to, once it has it."""
    alerts = json.loads(http(f"http://127.0.0.1:{port}/api/v2/alerts"))
    for alert in alerts:
        if alert["labels"]["alertname"] == name and labels.items() <= alert["labels"].items():
            return sorted(r["name"] for r in alert["receivers"])
    return None


def _timestamp(rfc3339: str) -> float:
    """Seconds since the epoch of a Prometheus RFC 3339 timestamp (nanoseconds, any offset)."""
    match = _RFC3339.fullmatch(rfc3339)
    assert match is not None, rfc3339
    zone = "+00:00" if match["zone"] == "Z" else match["zone"]
    seconds = datetime.fromisoformat(match["head"] + zone).timestamp()
    return seconds + float(f"0{match['frac'] or '.0'}")
