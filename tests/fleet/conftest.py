"""One fleet run shared by the fleet tests: the demo's agents through the real Collector.

Burst A: five of the demo's scenarios (the real anthropic and openai clients over a
local LLM API, instrumented in process) export OTLP to the load-balancing Collector,
which routes the filtered spans to two replicas. Burst B: the livelock scenario;
the replica that takes it is SIGKILLed while the whole burst waits in its reorder
window, then restarted on the same queue. The tests then read what every part saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otel_compaction import semconv as sc
from otel_compaction.demo import SCENARIOS, DemoResult, run_demo
from otel_compaction.otlp.decode import Signal, parse_json
from otel_compaction.otlp.extract import Item, ItemKind, span_items
from tests.dashboards import stack
from tests.fleet.fleet import Fleet, environ, queue_dir, running_fleet

LIVELOCK_SCENARIO = "note004-livelock"
# The SDK's batch span processor exports each agents' run once, at its end: one burst.
ONE_BURST = {
    "OTEL_BSP_SCHEDULE_DELAY": "600000",
    "OTEL_BSP_MAX_QUEUE_SIZE": "100000",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100000",
}


def read_items(traces: Path) -> list[Item]:
    """The engine inputs the processor reads in an OTLP/JSON traces file."""
    items = []
    for line in traces.read_text(encoding="utf-8").splitlines():
        items += span_items(parse_json(Signal.TRACES, line.encode()), targets=False)
    return items


def routed_spans(path: Path) -> dict[bytes, str]:
    """Span id → ``compaction.conversation.id`` of every span the LB Collector routed."""
    out: dict[bytes, str] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                    cid = attrs.get(sc.CONVERSATION_ID, {}).get("stringValue", "")
                    out[bytes.fromhex(span["spanId"])] = cid
    return out


def metric_sum(text: str, spec: sc.MetricSpec, suffix: str = "", **labels: str) -> float:
    """The sum of a metric's samples (``suffix``: ``_count`` of a histogram) in /metrics text."""
    family = spec.prometheus.removesuffix("_total")
    name = spec.prometheus + suffix
    return sum(
        sample.value
        for metric in text_string_to_metric_families(text)
        if metric.name == family
        for sample in metric.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


@dataclass
class Burst:
    """One agents' run and what the processors should read of it."""

    result: DemoResult
    items: list[Item]  # what the processor reads in the agents' traces file

    @property
    def read(self) -> dict[bytes, str]:
        """Span id → conversation of every span the processor reads."""
        return {item.span_id: item.conversation_id for item in self.items}

    def count(self, kind: ItemKind) -> int:
        """How many engine inputs of ``kind`` the burst holds."""
        return sum(item.kind is kind for item in self.items)


@dataclass
class FleetRun:
    """Everything the fleet tests look at."""

    fleet: Fleet
    a: Burst
    b: Burst
    received_after_a: dict[int, float]
    conversations_after_a: dict[int, int]
    holder: int  # the replica that took burst B and was killed
    raw_items_at_kill: int  # accepted, not yet applied spans on its disk at the kill
    life1_findings: list[dict[str, Any]]
    life2_metrics: str = ""


def _received(fleet: Fleet, n: int) -> float:
    return metric_sum(fleet.metrics(n), sc.METRIC_PROCESSOR_RECEIVED)


def _agents(fleet: Fleet, name: str, scenarios: list[Any]) -> Burst:
    endpoint = f"http://{fleet.ports.at('lb_http')}"
    with environ(ONE_BURST):
        result = run_demo(fleet.folder / name, scenarios, otlp_endpoint=endpoint)
    assert result.ok, [v for v in result.verdicts if not v.ok]
    traces = next(p for p in result.files if p.name == "traces.jsonl")
    return Burst(result, read_items(traces))


def _settled(fleet: Fleet, expected: int) -> bool | None:
    """Both replicas took ``expected`` spans in all and hold nothing in their windows."""
    received = sum(_received(fleet, n) for n in (0, 1))
    idle = all(fleet.status(n)["pending_items"] == 0 for n in (0, 1))
    return (received == expected and idle) or None


def _burst_a(fleet: Fleet) -> tuple[Burst, dict[int, float], dict[int, int]]:
    a = _agents(fleet, "agents-a", [s for s in SCENARIOS if s.name != LIVELOCK_SCENARIO])
    stack.wait_for("burst A applied by the replicas", lambda: _settled(fleet, len(a.read)))
    received = {n: _received(fleet, n) for n in (0, 1)}
    conversations = {n: int(fleet.status(n)["conversations"]) for n in (0, 1)}
    return a, received, conversations


def _holder(fleet: Fleet, before: dict[int, float], spans: int) -> int | None:
    """The replica that has accepted all ``spans`` of the burst since ``before``."""
    return next((n for n in (0, 1) if _received(fleet, n) - before[n] == spans), None)


def _kill_holding(fleet: Fleet, before: dict[int, float], b: Burst) -> tuple[int, int]:
    """SIGKILL the replica holding burst B; return it and the span count of its raw batches."""
    holder = stack.wait_for(
        "a replica to accept burst B", lambda: _holder(fleet, before, len(b.read))
    )
    assert fleet.status(holder)["pending_items"] > 0, "burst B was applied before the kill"
    fleet.kill_replica(holder)
    raw = sorted(queue_dir(fleet.folder, holder).glob("*.raw"))
    return holder, sum(int(p.stem.rsplit("-", 1)[1]) for p in raw)


def _replayed(fleet: Fleet, n: int) -> bool | None:
    """Replica ``n`` holds nothing in its window and no raw batch on disk."""
    raw = list(queue_dir(fleet.folder, n).glob("*.raw"))
    return (fleet.status(n)["pending_items"] == 0 and not raw) or None


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetRun]:
    """The fleet, after both bursts, the kill and the restart; still running."""
    folder = tmp_path_factory.mktemp("fleet")
    with running_fleet(folder) as fleet:
        a, received, conversations = _burst_a(fleet)
        b = _agents(fleet, "agents-b", [s for s in SCENARIOS if s.name == LIVELOCK_SCENARIO])
        holder, raw_items = _kill_holding(fleet, received, b)
        life1 = fleet.findings_logged(holder, 1)
        fleet.start_replica(holder, life=2)
        stack.wait_for("the restarted replica to apply burst B", lambda: _replayed(fleet, holder))
        run = FleetRun(fleet, a, b, received, conversations, holder, raw_items, life1)
        run.life2_metrics = fleet.metrics(holder)
        yield run
