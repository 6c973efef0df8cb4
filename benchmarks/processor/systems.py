"""The systems the processor benchmark compares, each a ``System`` of ``otlp_harness``.

Every Collector system is the pass-through (``otlp`` receiver, ``batch`` with its
defaults, ``otlp_grpc`` exporter to the sink) with at most one component more, so
the difference from (A) is that component's cost:

- (A) the pass-through;
- (G) ``groupbytrace`` before ``batch`` (as its README asks): every trace held
  ``wait_duration`` from its first span, then released whole;
- (T) ``tail_sampling`` before ``batch``, one ``always_sample`` policy: every trace
  held ``decision_wait``, then every span forwarded;
- (C) the load-balancing Collector: ``load_balancing`` instead of ``otlp_grpc``,
  routing on ``compaction.conversation.id`` over two sink endpoints.

G and T wait as long as our processor's reorder window (``WAIT``, 2 s), and hold up to
``NUM_TRACES`` traces, far more than a run has in flight, so neither evicts one (an
evicted trace's spans would be missing at the sink, and the run would stop).

(B) is our processor in enrich mode, forwarding every span to the same sink.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.processor.checks import metrics_endpoint
from benchmarks.processor.otlp_harness import System

WAIT = 2.0
NUM_TRACES = 200_000


def collector_config(port: int, exporter: dict[str, Any], name: str,
                     stateful: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """The pass-through's configuration, with ``stateful`` (one processor) before ``batch``."""
    processors = {**(stateful or {}), "batch": {}}
    return {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{port}"}}}},
        "processors": processors,
        "exporters": {name: exporter},
        "service": {
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "warn"}},
            "pipelines": {"traces": {"receivers": ["otlp"], "processors": list(processors),
                                     "exporters": [name]}},
        },
    }  # fmt: skip


STATEFUL: dict[str, dict[str, Any]] = {
    "G": {"groupbytrace": {"wait_duration": f"{WAIT:g}s", "num_traces": NUM_TRACES}},
    "T": {"tail_sampling": {
        "decision_wait": f"{WAIT:g}s", "num_traces": NUM_TRACES,
        "policies": [{"name": "keep-every-trace", "type": "always_sample"}],
    }},
}  # fmt: skip
"""The stateful peers' one processor each, by system key."""


def _written(work: Path, name: str, config: dict[str, Any]) -> Path:
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _to_sink(sinks: list[int]) -> dict[str, Any]:
    return {"endpoint": f"127.0.0.1:{sinks[0]}", "tls": {"insecure": True}}


def collector_system(otelcol: str, key: str) -> System:
    """(A), (G) or (T): the pass-through with ``STATEFUL[key]`` (none for A)."""
    stateful = STATEFUL.get(key)

    def command(work: Path, port: int, sinks: list[int]) -> list[str]:
        config = collector_config(port, _to_sink(sinks), "otlp_grpc", stateful)
        return [otelcol, "--config", str(_written(work, f"collector-{key}", config))]

    return System(key, LABELS[key], 1, command)


def balancer_system(otelcol: str) -> System:
    """(C) the load-balancing Collector, the tier in front of our replicas."""

    def command(work: Path, port: int, sinks: list[int]) -> list[str]:
        exporter = {
            "routing_key": "attributes",
            "routing_attributes": ["compaction.conversation.id"],
            "protocol": {"otlp": {"tls": {"insecure": True}}},
            "resolver": {"static": {"hostnames": [f"127.0.0.1:{p}" for p in sinks[:2]]}},
        }
        config = collector_config(port, exporter, "load_balancing")
        return [otelcol, "--config", str(_written(work, "balancer", config))]

    return System("C", LABELS["C"], 2, command)


def processor_system(key: str, window: float) -> System:
    """(B) our processor in enrich mode with reorder window ``window``."""

    def command(work: Path, port: int, sinks: list[int]) -> list[str]:
        queue = Path(tempfile.mkdtemp(prefix="queue-", dir=work))
        config = {
            "receivers": {"otlp_grpc": f"127.0.0.1:{port}", "otlp_http": None},
            "metrics": {"endpoint": metrics_endpoint(work, key)},  # read by check_run
            "output": {"mode": "enrich", "log_findings": False},
            "processing": {"reorder_window_seconds": window},
            "forward": {"endpoint": f"127.0.0.1:{sinks[0]}", "queue": {"directory": str(queue)}},
        }
        path = _written(work, f"processor-{key}", config)
        return [sys.executable, "-m", "otel_compaction", "processor", "--config", str(path)]

    label = f"({key}) our processor, enrich, reorder window {window:g} s"
    return System(key, label, 1, command)


LABELS = {
    "A": "(A) Collector pass-through (otlp → batch → otlp_grpc)",
    "G": f"(G) Collector groupbytrace, wait {WAIT:g} s (otlp → groupbytrace → batch → otlp_grpc)",
    "T": f"(T) Collector tail_sampling always_sample, wait {WAIT:g} s "
         "(otlp → tail_sampling → batch → otlp_grpc)",
    "C": "(C) load-balancing Collector (otlp → batch → load_balancing)",
}  # fmt: skip
