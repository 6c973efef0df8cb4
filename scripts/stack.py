"""The otel-compaction stack on one machine, without Docker: ``scripts/stack up|down|status``.

Runs the tap deployment of ``collector/compose.yaml`` from local programs, every
port on 127.0.0.1:

- the OpenTelemetry Collector and Jaeger v2 (in-memory storage), built from their
  Go modules by ``scripts/build-otel``;
- the compaction processor (``otel-compaction processor``, this checkout's .venv);
- Debian's Prometheus and Alertmanager, with the rules and routes of ``dashboards/``.

The configurations are the shipped ones (``collector/tap/``, ``collector/jaeger/``,
``dashboards/``) with each container address replaced by a loopback port; they are
written to the stack's folder with one log and one pid file per program. ``down``
stops by those pids only (SIGTERM, then SIGKILL). See docs/quickstart-stack.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state"))
DEFAULT_DIR = DEFAULT_DIR / "otel-compaction" / "stack"
READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0

PORTS: dict[str, int] = {
    "collector_otlp_grpc": 4317,  # agents send here
    "collector_otlp_http": 4318,
    "collector_findings": 4319,  # the processor's findings come back here
    "collector_prometheus": 8889,  # agents' metrics, for Prometheus
    "collector_telemetry": 8888,  # the Collector's own metrics
    "collector_health": 13133,
    "processor_otlp_grpc": 14317,
    "processor_otlp_http": 14318,
    "processor_metrics": 9464,
    "jaeger_otlp_grpc": 16317,
    "jaeger_otlp_http": 16318,
    "jaeger_query_http": 16686,  # UI and /api
    "jaeger_query_grpc": 16685,
    "prometheus": 9090,
    "alertmanager": 9093,
}
ORDER = ("jaeger", "alertmanager", "processor", "collector", "prometheus")


def relocate(document: Any, addresses: Mapping[str, str]) -> Any:
    """``document`` with every string equal to a key of ``addresses`` replaced by its value.

    Raises:
        ValueError: an address to replace does not occur (the file changed).
    """
    seen: set[str] = set()

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(value) for value in node]
        if isinstance(node, str) and node in addresses:
            seen.add(node)
            return addresses[node]
        return node

    out = walk(document)
    missing = sorted(set(addresses) - seen)
    if missing:
        raise ValueError(f"addresses not found in the configuration: {', '.join(missing)}")
    return out


def loopback(ports: Mapping[str, int], name: str) -> str:
    """``127.0.0.1:<port of name>``."""
    return f"127.0.0.1:{ports[name]}"


def collector_telemetry(config: dict[str, Any], port: int) -> dict[str, Any]:
    """``config`` with the Collector's own metrics on ``127.0.0.1:port`` (not :8888)."""
    reader = {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": port}}}}
    config["service"].setdefault("telemetry", {})["metrics"] = {"readers": [reader]}
    return config


def jaeger_env(ports: Mapping[str, int]) -> dict[str, str]:
    """The variables collector/jaeger/config.yaml reads: its listeners and its UI folder."""
    return {
        "JAEGER_OTLP_GRPC": loopback(ports, "jaeger_otlp_grpc"),
        "JAEGER_OTLP_HTTP": loopback(ports, "jaeger_otlp_http"),
        "JAEGER_QUERY_HTTP": loopback(ports, "jaeger_query_http"),
        "JAEGER_QUERY_GRPC": loopback(ports, "jaeger_query_grpc"),
        "JAEGER_UI_ASSETS": str(ROOT / "collector" / "jaeger" / "ui"),
    }


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")  # JSON is YAML
    return path


def write_configs(
    folder: Path, ports: Mapping[str, int], interval: str | None = None
) -> dict[str, Path]:
    """The loopback configurations of the Collector, the processor and Prometheus
    (``interval``: Prometheus's scrape and evaluation interval, when not the shipped one)."""
    at = {name: loopback(ports, name) for name in ports}
    collector = relocate(
        _load(ROOT / "collector" / "tap" / "otelcol.yaml"),
        {
            "0.0.0.0:4317": at["collector_otlp_grpc"],
            "0.0.0.0:4318": at["collector_otlp_http"],
            "0.0.0.0:4319": at["collector_findings"],
            "0.0.0.0:8889": at["collector_prometheus"],
            "0.0.0.0:13133": at["collector_health"],
            "jaeger:4317": at["jaeger_otlp_grpc"],
            "compaction-processor:14317": at["processor_otlp_grpc"],
        },
    )
    processor = relocate(
        _load(ROOT / "collector" / "tap" / "processor.yaml"),
        {
            "0.0.0.0:14317": at["processor_otlp_grpc"],
            "0.0.0.0:14318": at["processor_otlp_http"],
            "0.0.0.0:9464": at["processor_metrics"],
            "otel-collector:4319": at["collector_findings"],
            "/var/lib/otel-compaction/queue": str(folder / "processor-queue"),
            "/var/lib/otel-compaction/state": str(folder / "processor-state"),
        },
    )
    prometheus = relocate(
        _load(ROOT / "dashboards" / "prometheus.yml"),
        {
            "alerts/*.rules.yaml": str(ROOT / "dashboards" / "alerts" / "*.rules.yaml"),
            "alertmanager:9093": at["alertmanager"],
            "otel-collector:8889": at["collector_prometheus"],
            "compaction-processor:9464": at["processor_metrics"],
        },
    )
    if interval is not None:
        prometheus["global"].update(scrape_interval=interval, evaluation_interval=interval)
    return {
        "collector": _write(
            folder / "otelcol.yaml", collector_telemetry(collector, ports["collector_telemetry"])
        ),
        "processor": _write(folder / "processor.yaml", processor),
        "prometheus": _write(folder / "prometheus.yml", prometheus),
    }


@dataclass(frozen=True, slots=True)
class Program:
    """One program of the stack: how to start it and how to tell it is ready."""

    name: str
    argv: list[str]
    ready_url: str
    env: Mapping[str, str]


def _debian(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        sys.exit(f"stack: {name} is not installed (scripts/install-system-deps installs it)")
    return path


def _built(target: str) -> str:
    script = str(ROOT / "scripts" / "build-otel")
    result = subprocess.run([script, target], stdout=subprocess.PIPE, text=True)  # noqa: S603 - our script
    if result.returncode != 0:
        sys.exit(f"stack: scripts/build-otel {target} failed")
    return result.stdout.strip().splitlines()[-1]


def programs(
    folder: Path, ports: Mapping[str, int], interval: str | None = None
) -> dict[str, Program]:
    """Every program of the stack, configured for ``folder`` and ``ports``."""
    configs = write_configs(folder, ports, interval)
    url = {name: f"http://{loopback(ports, name)}" for name in ports}
    return {
        "jaeger": Program(
            "jaeger",
            [_built("jaeger"), f"--config={ROOT / 'collector' / 'jaeger' / 'config.yaml'}"],
            f"{url['jaeger_query_http']}/api/services",
            jaeger_env(ports),
        ),
        "alertmanager": Program(
            "alertmanager",
            [
                _debian("prometheus-alertmanager"),
                f"--config.file={ROOT / 'dashboards' / 'alertmanager' / 'alertmanager.yml'}",
                f"--storage.path={folder / 'alertmanager'}",
                f"--web.listen-address={loopback(ports, 'alertmanager')}",
                # Debian's Alertmanager has no web app: a small alerts page of ours.
                f"--web.ui-path={ROOT / 'dashboards' / 'alertmanager' / 'ui'}",
                "--cluster.listen-address=",
            ],
            f"{url['alertmanager']}/-/ready",
            {},
        ),
        "processor": Program(
            "processor",
            [
                sys.executable,
                "-m",
                "otel_compaction",
                "processor",
                "--config",
                str(configs["processor"]),
            ],
            f"{url['processor_metrics']}/readyz",
            {},
        ),
        "collector": Program(
            "collector",
            [_built("collector"), f"--config={configs['collector']}"],
            url["collector_health"],
            {},
        ),
        "prometheus": Program(
            "prometheus",
            [
                _debian("prometheus"),
                f"--config.file={configs['prometheus']}",
                f"--storage.tsdb.path={folder / 'prometheus'}",
                f"--web.listen-address={loopback(ports, 'prometheus')}",
                "--enable-feature=exemplar-storage",
            ],
            f"{url['prometheus']}/-/ready",
            {},
        ),
    }


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
            return bool(response.status == 200)
    except urllib.error.HTTPError as err:
        err.close()  # a 503 while starting: not ready yet
        return False
    except OSError:
        return False


def _pid_file(folder: Path, name: str) -> Path:
    return folder / f"{name}.pid"


def running_pid(folder: Path, name: str) -> int | None:
    """The pid in ``name``'s pid file if that process still runs this stack's program."""
    try:
        pid = int(_pid_file(folder, name).read_text(encoding="ascii"))
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (OSError, ValueError):
        return None
    # A pid the system reused for another process is not ours: we mark our children.
    return pid if f"OTEL_COMPACTION_STACK={folder}".encode() in environ.split(b"\0") else None


def start(folder: Path, program: Program) -> int:
    """Start ``program`` in its own session, output in ``<name>.log``; return its pid."""
    env = {**os.environ, **program.env, "OTEL_COMPACTION_STACK": str(folder)}
    with (folder / f"{program.name}.log").open("ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - the stack's own programs, fixed argv
            program.argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    _pid_file(folder, program.name).write_text(str(proc.pid), encoding="ascii")
    return proc.pid


def wait_ready(folder: Path, program: Program) -> bool:
    """Wait until ``program`` answers its readiness URL; False when it died or timed out."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    # Not running_pid(): until the child has exec'd, /proc/<pid>/environ is still ours,
    # without the stack's mark, and a program just started would look dead.
    while time.monotonic() < deadline:
        if _reaped(folder, program.name):
            return False
        if _answers(program.ready_url):
            return True
        time.sleep(0.25)
    return False


def _reaped(folder: Path, name: str) -> bool:
    """Whether ``name``'s process, a child of this ``up``, has exited."""
    try:
        pid = int(_pid_file(folder, name).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return True
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False  # not our child (started by an earlier `up`)
    return done == pid


def up(folder: Path, ports: Mapping[str, int], interval: str | None = None) -> int:
    """Start every program not running yet, in dependency order; 0 when all are ready."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, program in programs(folder, ports, interval).items():
        if running_pid(folder, name) is not None:
            print(f"{name}: already running")
            continue
        pid = start(folder, program)
        if not wait_ready(folder, program):
            print(
                f"stack: {name} did not become ready; see {folder / (name + '.log')}",
                file=sys.stderr,
            )
            down(folder)
            return 1
        print(f"{name}: pid {pid}, ready at {program.ready_url}")
    _print_urls(folder, ports)
    return 0


def stop(folder: Path, name: str) -> None:
    """SIGTERM ``name``'s process group, SIGKILL it after a while; remove its pid file."""
    pid = running_pid(folder, name)
    if pid is not None:
        _signal_until_gone(pid, signal.SIGTERM, STOP_TIMEOUT_SECONDS) or _signal_until_gone(
            pid, signal.SIGKILL, 5.0
        )
        print(f"{name}: stopped (pid {pid})")
    _pid_file(folder, name).unlink(missing_ok=True)


def _signal_until_gone(pid: int, signum: int, timeout: float) -> bool:
    try:
        os.killpg(pid, signum)  # the program's own session: it and its children
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"


def down(folder: Path) -> int:
    """Stop every program of the stack in ``folder``, last started first."""
    for name in reversed(ORDER):
        stop(folder, name)
    return 0


def status(folder: Path) -> int:
    """Print which programs run; 0 when all do."""
    pids = {name: running_pid(folder, name) for name in ORDER}
    for name, pid in pids.items():
        print(f"{name}: {'pid ' + str(pid) if pid else 'not running'}")
    return 0 if all(pids.values()) else 1


def _print_urls(folder: Path, ports: Mapping[str, int]) -> None:
    at: Callable[[str], str] = lambda name: loopback(ports, name)  # noqa: E731
    print(
        f"\nsend OTLP to grpc://{at('collector_otlp_grpc')} or http://{at('collector_otlp_http')}\n"
        f"traces http://{at('jaeger_query_http')}  alerts http://{at('prometheus')}/classic/alerts"
        f"  routed alerts http://{at('alertmanager')}"
        f"  processor http://{at('processor_metrics')}/metrics\n"
        f"logs and pid files: {folder}"
    )


def _ports(pairs: list[str]) -> dict[str, int]:
    ports = dict(PORTS)
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in PORTS or not value.isdigit():
            sys.exit(f"stack: --port NAME=PORT, NAME one of {', '.join(PORTS)}; got {pair!r}")
        ports[name] = int(value)
    return ports


def main(argv: list[str] | None = None) -> int:
    """The command line of ``scripts/stack``."""
    parser = argparse.ArgumentParser(prog="scripts/stack", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"default {DEFAULT_DIR}")
    parser.add_argument("--port", action="append", default=[], metavar="NAME=PORT")
    parser.add_argument(
        "--interval",
        metavar="DURATION",
        help="Prometheus's scrape and evaluation interval (default: prometheus.yml's, 15s)",
    )
    args = parser.parse_args(argv)
    folder = args.dir.resolve()
    if args.command == "up":
        return up(folder, _ports(args.port), args.interval)
    if args.command == "down":
        return down(folder)
    return status(folder)


if __name__ == "__main__":
    sys.exit(main())
