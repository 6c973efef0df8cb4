"""The scaled-out fleet of ``collector/scaled/`` on loopback, from the shipped configurations.

Agents ──OTLP──▶ load-balancing Collector ──load_balancing (static)──▶ replica 0, replica 1
(tap); replicas ──findings──▶ backend Collector ──▶ Jaeger; the LB Collector also sends
every span to Jaeger. Prometheus scrapes both replicas and the LB Collector's
``prometheus`` exporter and alerts to Alertmanager.

Each shipped file is loaded and its container addresses replaced by loopback ports
(``scripts/stack.py``'s ``relocate``, which fails when an address is missing); the
only additions are the test's: a ``file`` exporter recording what the LB
Collector's filtered pipeline routed, the replicas' list, and private ports for
the Collectors' own metrics.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from tests.dashboards import stack
from tests.fleet import builds

ROOT = builds.ROOT
SCALED = ROOT / "collector" / "scaled"
JAEGER_CONFIG = ROOT / "collector" / "jaeger" / "config.yaml"
# The shipped replica holds items 2 s; 5 s here, so the test kills a replica while the
# whole burst it accepted is still in the window (the case a crash used to lose).
REORDER_WINDOW_SECONDS = 5.0
PROCESSOR_JOB = "otel-compaction-processor"


def _load_stack_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stack_tool", ROOT / "scripts" / "stack.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


STACK_TOOL = _load_stack_tool()
relocate = STACK_TOOL.relocate


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")  # JSON is YAML
    return path


@dataclass
class Ports:
    """Every port of the fleet, free-picked on 127.0.0.1."""

    names: tuple[str, ...] = (
        "lb_grpc", "lb_http", "lb_prometheus", "lb_health", "lb_telemetry",
        "backend_grpc", "backend_health", "backend_telemetry",
        "jaeger_otlp_grpc", "jaeger_otlp_http", "jaeger_query_http", "jaeger_query_grpc",
        "r0_grpc", "r0_http", "r0_metrics", "r1_grpc", "r1_http", "r1_metrics",
        "prometheus", "alertmanager",
    )  # fmt: skip
    port: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        while len(set(self.port.values())) < len(self.names):
            self.port = {name: stack.free_port() for name in self.names}

    def at(self, name: str) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port[name]}"


def lb_config(folder: Path, ports: Ports) -> Path:
    """The LB Collector: collector/scaled/otelcol-lb-static.yaml on loopback, two replicas."""
    config = relocate(
        _yaml(SCALED / "otelcol-lb-static.yaml"),
        {
            "0.0.0.0:4317": ports.at("lb_grpc"),
            "0.0.0.0:4318": ports.at("lb_http"),
            "0.0.0.0:8889": ports.at("lb_prometheus"),
            "0.0.0.0:13133": ports.at("lb_health"),
            "jaeger:4317": ports.at("jaeger_otlp_grpc"),
        },
    )
    replicas = [ports.at("r0_grpc"), ports.at("r1_grpc")]
    for name in ("load_balancing/conversations", "load_balancing/sessions"):
        static = config["exporters"][name]["resolver"]["static"]
        assert len(static["hostnames"]) == 3  # the shipped three; this fleet has two
        static["hostnames"] = replicas
    # What the filtered pipeline hands to the load balancer, for the test to read.
    config["exporters"]["file/routed"] = {"path": str(folder / "routed.jsonl")}
    config["service"]["pipelines"]["traces/compaction"]["exporters"].append("file/routed")
    STACK_TOOL.collector_telemetry(config, ports.port["lb_telemetry"])
    return _write(folder / "otelcol-lb.yaml", config)


def backend_config(folder: Path, ports: Ports) -> Path:
    """The backend Collector: collector/scaled/otelcol-backend.yaml on loopback."""
    config = relocate(
        _yaml(SCALED / "otelcol-backend.yaml"),
        {
            "0.0.0.0:4317": ports.at("backend_grpc"),
            "0.0.0.0:13133": ports.at("backend_health"),
            "jaeger:4317": ports.at("jaeger_otlp_grpc"),
        },
    )
    STACK_TOOL.collector_telemetry(config, ports.port["backend_telemetry"])
    return _write(folder / "otelcol-backend.yaml", config)


def replica_config(folder: Path, ports: Ports, n: int) -> Path:
    """Replica ``n``: collector/scaled/processor.yaml on loopback, its own queue and state
    folders (as a StatefulSet gives each replica its own volume)."""
    config = relocate(
        _yaml(SCALED / "processor.yaml"),
        {
            "0.0.0.0:4317": ports.at(f"r{n}_grpc"),
            "0.0.0.0:4318": ports.at(f"r{n}_http"),
            "0.0.0.0:9464": ports.at(f"r{n}_metrics"),
            "otel-collector-backend:4317": ports.at("backend_grpc"),
            "/var/lib/otel-compaction/queue": str(queue_dir(folder, n)),
            "/var/lib/otel-compaction/state": str(state_dir(folder, n)),
        },
    )
    config["processing"]["reorder_window_seconds"] = REORDER_WINDOW_SECONDS
    return _write(folder / f"processor-{n}.yaml", config)


def queue_dir(folder: Path, n: int) -> Path:
    """Replica ``n``'s persistent queue."""
    return folder / f"queue-{n}"


def state_dir(folder: Path, n: int) -> Path:
    """Replica ``n``'s engine state snapshots."""
    return folder / f"state-{n}"


def prometheus_config(folder: Path, ports: Ports) -> Path:
    """The end-to-end test's Prometheus config, scraping both replicas and the LB Collector."""
    path = folder / "prometheus.yml"
    stack.prometheus_config(path, ports.port["r0_metrics"], ports.port["alertmanager"])
    config = json.loads(path.read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    assert job["job_name"] == PROCESSOR_JOB
    job["static_configs"][0]["targets"] = [ports.at("r0_metrics"), ports.at("r1_metrics")]
    # As dashboards/prometheus.yml: job and instance come from the agents' resource.
    config["scrape_configs"].append(
        {
            "job_name": "otel-collector",
            "honor_labels": True,
            "static_configs": [{"targets": [ports.at("lb_prometheus")]}],
        }
    )
    return _write(path, config)


def replica_argv(folder: Path, n: int) -> list[str]:
    """``otel-compaction processor`` with replica ``n``'s configuration."""
    config = folder / f"processor-{n}.yaml"
    return [sys.executable, "-m", "otel_compaction", "processor", "--config", str(config)]


@dataclass
class Fleet:
    """The running fleet: its folder, its ports, and the replicas' processes by index."""

    folder: Path
    ports: Ports
    replicas: dict[int, subprocess.Popen[bytes]]
    stack: ExitStack

    def start_replica(self, n: int, life: int) -> None:
        """Start replica ``n`` (its log: ``replica-<n>.<life>.log``) and wait until it is ready."""
        log = self.folder / f"replica-{n}.{life}.log"
        process = self.stack.enter_context(
            stack.process(replica_argv(self.folder, n), self.folder, log)
        )
        self.replicas[n] = process
        url = f"http://{self.ports.at(f'r{n}_metrics')}/readyz"
        stack.wait_for(f"replica {n}", lambda: stack.http(url))

    def kill_replica(self, n: int) -> None:
        """SIGKILL replica ``n`` and reap it."""
        process = self.replicas[n]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def status(self, n: int) -> dict[str, Any]:
        """Replica ``n``'s ``/healthz`` document."""
        status: dict[str, Any] = json.loads(
            stack.http(f"http://{self.ports.at(f'r{n}_metrics')}/healthz")
        )
        return status

    def metrics(self, n: int) -> str:
        """Replica ``n``'s ``/metrics`` text."""
        return stack.http(f"http://{self.ports.at(f'r{n}_metrics')}/metrics").decode()

    def findings_logged(self, n: int, life: int) -> list[dict[str, Any]]:
        """The findings replica ``n`` logged (one JSON line each) in its ``life``-th run."""
        text = (self.folder / f"replica-{n}.{life}.log").read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _collector(fleet: Fleet, config: Path, name: str, health: str) -> None:
    argv = [str(builds.collector()), f"--config={config}"]
    fleet.stack.enter_context(stack.process(argv, fleet.folder, fleet.folder / f"{name}.log"))
    stack.wait_for(name, lambda: stack.http(f"http://{fleet.ports.at(health)}/"))


def _jaeger(fleet: Fleet) -> None:
    ports = fleet.ports
    env = STACK_TOOL.jaeger_env(ports.port)  # the same names: jaeger_otlp_grpc, ...
    argv = [str(builds.jaeger()), f"--config={JAEGER_CONFIG}"]
    with environ(env):
        fleet.stack.enter_context(stack.process(argv, fleet.folder, fleet.folder / "jaeger.log"))
    url = f"http://{ports.at('jaeger_query_http')}/api/services"
    stack.wait_for("jaeger", lambda: stack.http(url))


@contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set, restored on exit."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def running_fleet(folder: Path) -> Iterator[Fleet]:
    """Start Jaeger, Alertmanager, the backend Collector, both replicas, the LB Collector
    and Prometheus, in that order; stop them all (by pid) on exit."""
    ports = Ports()
    with ExitStack() as exits:
        fleet = Fleet(folder, ports, {}, exits)
        _jaeger(fleet)
        am = stack.alertmanager_argv(folder / "am", ports.port["alertmanager"])
        exits.enter_context(stack.process(am, folder, folder / "alertmanager.log"))
        _collector(fleet, backend_config(folder, ports), "backend collector", "backend_health")
        for n in (0, 1):
            replica_config(folder, ports, n)
            fleet.start_replica(n, life=1)
        _collector(fleet, lb_config(folder, ports), "lb collector", "lb_health")
        prom = stack.prometheus_argv(
            prometheus_config(folder, ports), folder / "tsdb", ports.port["prometheus"]
        )
        exits.enter_context(stack.process(prom, folder, folder / "prometheus.log"))
        api = stack.PrometheusAPI(ports.port["prometheus"])
        stack.wait_for("prometheus", lambda: stack.http(f"{api.base}/-/ready"))
        stack.wait_for(
            "alertmanager", lambda: stack.http(f"http://{ports.at('alertmanager')}/-/ready")
        )
        yield fleet
