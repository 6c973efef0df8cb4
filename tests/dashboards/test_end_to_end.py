"""End to end: the processor fed recorded conversations, scraped by a real Prometheus.

The healthy conversation must raise no alert at all (not even pending); the
livelocked one (the livelock incident's accelerating cadence) must bring
CompactionReexpansionLivelock to `firing` in Prometheus and into the example
Alertmanager's on-call route; and every overview query must have a finite value.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otel_compaction import semconv
from tests.dashboards import promql, stack
from tests.dashboards.catalog import (
    BUILTINS,
    ROOT,
    all_values,
    load_dashboards,
    load_tool,
    queries,
)

TESTDATA = ROOT / "tests" / "processor" / "testdata"
HEALTHY = TESTDATA / "healthy.traces.jsonl"
LIVELOCK = TESTDATA / "livelock_004.traces.jsonl"
LIVELOCK_ALERT = "CompactionReexpansionLivelock"
REPLAY = load_tool("replay")  # the quickstart's replayer, shifting the recordings to now

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]


def _compaction_spans(path: Path) -> int:
    """How many compaction spans a recorded OTLP/JSON file holds."""
    return sum(
        span["name"] == semconv.SPAN_COMPACTION
        for line in path.read_text(encoding="utf-8").splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    )


def _processor_compactions(metrics_port: int) -> float:
    """The processor's own compaction count, read from its /metrics."""
    text = stack.http(f"http://127.0.0.1:{metrics_port}/metrics").decode()
    family = semconv.METRIC_COMPACTIONS.prometheus.removesuffix("_total")
    return sum(
        sample.value
        for metric in text_string_to_metric_families(text)
        if metric.name == family
        for sample in metric.samples
        if sample.name == semconv.METRIC_COMPACTIONS.prometheus
    )


def _prometheus_sees(api: stack.PrometheusAPI, compactions: int) -> float | None:
    """The time at which Prometheus first holds ``compactions`` compactions, else None."""
    result = api.query(f"sum({semconv.METRIC_COMPACTIONS.prometheus})")
    if result and float(result[0]["value"][1]) == compactions:
        return time.time()
    return None


def _range_end(api: stack.PrometheusAPI, start: float) -> float | None:
    """Now, once a 1 s range from ``start`` to now holds the processor's livelock finding."""
    end = time.time()
    expr = f'{semconv.METRIC_FINDINGS.prometheus}{{compaction_finding_kind="reexpansion_livelock"}}'
    found = api.query_range(expr, start, end, 1.0)
    return end if any(float(v) > 0 for s in found for _, v in s["values"]) else None


def test_livelock_fires_healthy_stays_quiet_and_every_panel_has_data(tmp_path: Path) -> None:
    """Healthy: no alert; livelock: the alert fires and is routed; each overview query has a
    finite value."""
    otlp, metrics, prom, am = (stack.free_port() for _ in range(4))
    config = tmp_path / "prometheus.yml"
    stack.prometheus_config(config, metrics, am)
    with (
        stack.process(stack.processor_argv(otlp, metrics), tmp_path, tmp_path / "processor.log"),
        stack.process(stack.alertmanager_argv(tmp_path / "am", am), tmp_path, tmp_path / "am.log"),
        stack.process(
            stack.prometheus_argv(config, tmp_path / "tsdb", prom), tmp_path, tmp_path / "prom.log"
        ),
    ):
        api = stack.PrometheusAPI(prom)
        stack.wait_for("the processor", lambda: stack.http(f"http://127.0.0.1:{metrics}/healthz"))
        stack.wait_for("prometheus", lambda: stack.http(f"http://127.0.0.1:{prom}/-/ready"))
        stack.wait_for("alertmanager", lambda: stack.http(f"http://127.0.0.1:{am}/-/ready"))

        started = time.time()
        healthy = _compaction_spans(HEALTHY)
        REPLAY.replay(HEALTHY, f"http://127.0.0.1:{otlp}")
        stack.wait_for(
            "the healthy compactions", lambda: _processor_compactions(metrics) == healthy or None
        )
        seen = stack.wait_for("a scrape of them", lambda: _prometheus_sees(api, healthy))
        stack.wait_for("rule evaluations", lambda: api.evaluations_after(seen + 1.0) or None)
        assert api.alerts() == [], "the healthy conversation raised an alert"

        REPLAY.replay(LIVELOCK, f"http://127.0.0.1:{otlp}")
        alert = stack.wait_for("the livelock alert to fire", lambda: api.firing(LIVELOCK_ALERT))
        assert alert["labels"]["severity"] == "critical"
        receivers = stack.wait_for(
            "alertmanager", lambda: stack.alertmanager_receivers(am, LIVELOCK_ALERT)
        )
        assert receivers == ["compaction-oncall"]

        # The replayed spans carry no metrics of their own: the processor's path, which
        # the overview reads by default, has every series; the drill-down (the agents'
        # path) is run by test_first_finding.py with agents exporting their own.
        overview = load_dashboards()["compaction-overview"]
        end = stack.wait_for("a range that holds the finding", lambda: _range_end(api, started))
        empty = []
        for query in queries("compaction-overview", overview):
            expr = promql.substitute(query.expr, all_values(overview), BUILTINS)
            values = [v for s in api.query_range(expr, started, end, 1.0) for v in s["values"]]
            if not any(math.isfinite(float(v)) for _, v in values):
                empty.append(f"{query.where}: {expr}")
        assert not empty, "queries without a finite value:\n" + "\n".join(empty)
