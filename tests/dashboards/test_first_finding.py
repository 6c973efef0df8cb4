"""End to end on ``scripts/stack``: a 10-second agent's first finding reaches the alert,
every panel has data for the run, and a browser shows the trace and the alert.

The stack is the one the quickstart starts (real Collector, Jaeger, processor,
Prometheus, Alertmanager; Prometheus every second). A long-lived agent (metrics
exported every second, its series at zero before its first compaction) and a
short-lived one (the demo's livelock run, exporting its metrics once, at exit) send
to the Collector. Their spans reach the processor too, so each finding is counted
on both paths (docs/dashboards.md#two-paths-one-count).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otel_compaction import semconv as sc
from tests.dashboards import browser, promql, stack
from tests.dashboards.catalog import (
    BUILTINS,
    ROOT,
    all_values,
    load_dashboards,
    queries,
    variables,
)
from tests.fleet.fleet import STACK_TOOL

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

ALERT = "CompactionReexpansionLivelock"
AGENT_JOB = "demo-agent"  # the demo's service.name: job and service_name
PROCESSOR_JOB = "otel-compaction-processor"
SHORT, LONG = "short-lived-1", "long-lived-1"  # service.instance.id, so `instance`
SHORT_AGENT_SECONDS = 60.0  # the demo's livelock run, interpreter start included
LIVELOCK = f'{sc.METRIC_FINDINGS.prometheus}{{compaction_finding_kind="reexpansion_livelock"'


def _stack(command: str, folder: Path, *args: str) -> None:
    """``scripts/stack COMMAND --dir FOLDER ARGS`` as a person runs it (this interpreter)."""
    argv = [sys.executable, str(ROOT / "scripts" / "stack.py"), command, f"--dir={folder}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@dataclass
class Run:
    """The running stack and what the two agents did."""

    ports: dict[str, int]
    api: stack.PrometheusAPI
    started: float
    short_seconds: float
    folder: Path

    def url(self, name: str, path: str = "") -> str:
        """``http://127.0.0.1:<port of name><path>``."""
        return f"http://127.0.0.1:{self.ports[name]}{path}"


def _agent_env(instance: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        OTEL_RESOURCE_ATTRIBUTES=f"service.instance.id={instance}",
        OTEL_BSP_SCHEDULE_DELAY="500",
        NO_PROXY="127.0.0.1",
    )
    return env


def _scrapes(api: stack.PrometheusAPI) -> bool | None:
    """Prometheus has scraped the Collector three times (a newcomer's series stand out)."""
    result = api.query('count_over_time(up{job="otel-collector"}[1m])')
    return (bool(result) and float(result[0]["value"][1]) >= 3) or None


def _short_agent(folder: Path, endpoint: str) -> float:
    """Run the demo's livelock scenario as a process of its own; its wall time."""
    argv = [sys.executable, "-m", "otel_compaction", "demo", "-q", "--out", str(folder)]
    argv += ["--scenario", "note004-livelock", "--otlp-endpoint", endpoint]
    started = time.monotonic()
    done = subprocess.run(
        argv, env=_agent_env(SHORT), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return time.monotonic() - started


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The stack after both agents ran, the short one's alert firing; stopped afterwards."""
    folder = tmp_path_factory.mktemp("stack")
    ports = {name: stack.free_port() for name in STACK_TOOL.PORTS}
    try:
        _stack("up", folder, "--interval", "1s", *(f"--port={n}={p}" for n, p in ports.items()))
        api = stack.PrometheusAPI(ports["prometheus"])
        stack.wait_for("three scrapes of the Collector", lambda: _scrapes(api))
        started = time.time()
        endpoint = f"http://127.0.0.1:{ports['collector_otlp_http']}"
        long_argv = [sys.executable, "-m", "tests.dashboards.long_agent"]
        long_argv += [str(folder / "long"), endpoint, "4"]
        with subprocess.Popen(long_argv, env=_agent_env(LONG), cwd=ROOT) as long_agent:
            seconds = _short_agent(folder / "short", endpoint)
            assert long_agent.wait(timeout=300) == 0, "the long-lived agent's scenarios failed"
        one = Run(ports, api, started, seconds, folder)
        stack.wait_for(
            "the alert for the short-lived agent",
            lambda: api.firing(ALERT, job=AGENT_JOB, service_name=AGENT_JOB),
        )
        yield one
    finally:
        _stack("down", folder)


def test_a_short_lived_agents_first_finding_fires_the_alert(run: Run) -> None:
    """An agent that lives seconds exports once, at exit; its first finding still alerts."""
    assert run.short_seconds < SHORT_AGENT_SECONDS
    raw = run.api.query(f'{LIVELOCK}, instance="{SHORT}"}}')
    assert raw, "the short-lived agent's counter"
    assert float(raw[0]["value"][1]) >= 1
    # What increase() alone sees: the series was born at its value, never at zero.
    plain = run.api.query(f'increase({LIVELOCK}, instance="{SHORT}"}}[1h])')
    assert plain
    assert float(plain[0]["value"][1]) == 0
    alert = run.api.firing(ALERT, job=AGENT_JOB, service_name=AGENT_JOB)
    assert alert is not None
    assert float(alert["value"]) >= 1
    # Only the short-lived agent had a livelock: the long-lived one's counter stayed 0.
    long_count = run.api.query(f'{LIVELOCK}, instance="{LONG}"}}')
    assert long_count
    assert float(long_count[0]["value"][1]) == 0


def test_the_alert_pages_once_though_two_paths_count_the_finding(run: Run) -> None:
    """Alertmanager routes the agent's alert to on-call and holds back the processor's copy."""
    am = run.ports["alertmanager"]
    receivers = stack.wait_for(
        "alertmanager", lambda: stack.alertmanager_receivers(am, ALERT, job=AGENT_JOB)
    )
    assert receivers == ["compaction-oncall"]
    stack.wait_for("the processor's copy", lambda: run.api.firing(ALERT, job=PROCESSOR_JOB))

    def processor_copy() -> dict[str, Any] | None:
        alerts = json.loads(stack.http(f"http://127.0.0.1:{am}/api/v2/alerts"))
        return next(
            (a for a in alerts if a["labels"]["alertname"] == ALERT
             and a["labels"]["job"] == PROCESSOR_JOB),
            None,
        )  # fmt: skip

    copy = stack.wait_for("alertmanager to hold the processor's copy", processor_copy)
    assert copy["status"]["state"] == "suppressed"
    assert copy["status"]["inhibitedBy"]


def _settings() -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """Each dashboard with its variables as a newcomer finds them, the overview on the
    agents' path too, and the drill-down on the short-lived agent alone."""
    out = []
    for name, dashboard in load_dashboards().items():
        values = all_values(dashboard)
        out.append((name, dashboard, values))
        path = variables(dashboard).get("path")
        for option in path["options"] if path else []:
            if option["value"] != values["path"]:
                out.append(
                    (f"{name} ({option['text']})", dashboard, {**values, "path": option["value"]})
                )
        if "agent" in values:  # the short-lived agent alone: each series born at exit
            out.append((f"{name} (agent {SHORT})", dashboard, {**values, "agent": SHORT}))
    return out


def _finite(series: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(v)) for s in series for _, v in s["values"])


def test_every_panel_query_has_finite_data_for_the_run(run: Run) -> None:
    """Each panel and annotation query has a finite value during the run, on both paths."""
    end = time.time()
    empty = []
    for name, dashboard, values in _settings():
        for query in queries(name.split(" ")[0], dashboard):
            expr = promql.substitute(query.expr, values, BUILTINS)
            if not _finite(run.api.query_range(expr, run.started, end, 1.0)):
                empty.append(f"{name}: {query.where}: {expr}")
    assert not empty, "queries without a finite value for the run:\n" + "\n".join(empty)


def _flagged(run: Run) -> str:
    """The id of the short-lived agent's trace whose compaction is flagged livelock."""
    tags = json.dumps({sc.FLAG_LIVELOCK: "true"})
    query = urllib.parse.urlencode({"service": AGENT_JOB, "tags": tags, "lookback": "1h"})
    found = json.loads(stack.http(run.url("jaeger_query_http", f"/api/traces?{query}")))["data"]
    assert len(found) == 1, [t["traceID"] for t in found]
    trace_id: str = found[0]["traceID"]
    return trace_id


def test_the_pages_the_quickstart_names_show_the_trace_and_the_alert(run: Run) -> None:
    """Jaeger's search and trace pages, Prometheus's alerts page and Alertmanager's page
    open in Chromium and show the flagged compaction, its finding and the firing alert."""
    trace_id = stack.wait_for("the finding in Jaeger", lambda: _finding_in(run, _flagged(run)))
    tags = json.dumps({sc.FLAG_LIVELOCK: "true"})
    query = urllib.parse.urlencode({"service": AGENT_JOB, "tags": tags})
    search = browser.page(run.url("jaeger_query_http", f"/search?{query}"))
    assert f'href="/trace/{trace_id}"' in search
    # As the page's own form sends it: the tags typed as key=value.
    typed = urllib.parse.urlencode({"service": AGENT_JOB, "tags": f"{sc.FLAG_LIVELOCK}=true"})
    assert f'href="/trace/{trace_id}"' in browser.page(
        run.url("jaeger_query_http", f"/search?{typed}&lookback=1h&limit=20")
    )
    assert sc.FLAG_LIVELOCK in search
    trace = browser.page(run.url("jaeger_query_http", f"/trace/{trace_id}"))
    assert 'data-ready="true"' in trace
    assert 'class="error"' not in trace
    assert 'class="span compaction"' in trace
    assert f"{sc.FLAG_LIVELOCK}=true" in trace
    assert 'class="span finding"' in trace
    assert "reexpansion_livelock" in trace
    alerts = browser.page(run.url("prometheus", "/classic/alerts"))
    assert ALERT in alerts
    assert "firing" in alerts.lower()
    am = browser.page(run.url("alertmanager", "/"))
    assert f'data-alertname="{ALERT}"' in am
    assert "compaction-oncall" in am
    for path in ("/classic/alerts", "/classic/rules", "/classic/targets"):
        assert "Error 404" not in browser.page(run.url("prometheus", path)), path
    quickstart = (ROOT / "docs" / "quickstart-stack.md").read_text(encoding="utf-8")
    for page in ("http://localhost:16686", "http://localhost:9090/classic/alerts",
                 "http://localhost:9093"):  # fmt: skip
        assert page in quickstart, page


def _finding_in(run: Run, trace_id: str) -> str | None:
    """``trace_id`` once Jaeger holds the processor's finding span in it."""
    trace = json.loads(stack.http(run.url("jaeger_query_http", f"/api/traces/{trace_id}")))
    names = {span["operationName"] for span in trace["data"][0]["spans"]}
    return trace_id if sc.SPAN_FINDING in names else None
