"""Where the dashboards, rules and provisioning live, and what names they may use.

Shared by the tests of this directory: loading the files, listing every PromQL
query a dashboard runs, resolving a Prometheus metric name to its ``semconv``
spec, and running ``promtool``/``amtool`` (failing, not skipping, when absent:
``scripts/test`` installs them).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from otel_compaction import semconv
from otel_compaction.semconv import MetricSpec

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
DASHBOARD_FILES = sorted((DASHBOARDS / "grafana" / "dashboards").glob("*.json"))
RULE_FILES = sorted((DASHBOARDS / "alerts").glob("*.rules.yaml"))
RULE_TEST_FILES = sorted((DASHBOARDS / "alerts" / "tests").glob("*.yaml"))
PROVISIONING = DASHBOARDS / "grafana" / "provisioning"
GRAFANA_ALERTS = PROVISIONING / "alerting" / "compaction-alerts.yaml"
ALERTMANAGER_CONFIG = DASHBOARDS / "alertmanager" / "alertmanager.yml"
PROMETHEUS_CONFIG = DASHBOARDS / "prometheus.yml"
COMPOSE = ROOT / "collector" / "compose.yaml"
RUNBOOKS = ROOT / "docs" / "runbooks"

# Labels that come from the scrape or the Collector's Prometheus exporter rather
# than from a metric attribute: job and instance (service.namespace/service.name
# and service.instance.id), service_* (resource_to_telemetry_conversion), le.
STANDARD_LABELS = frozenset(
    {"job", "instance", "le", "service_name", "service_namespace", "service_instance_id"}
)
# Series Prometheus writes itself for every scrape: the first-event idiom reads `up`.
SCRAPE_SERIES = frozenset({"up"})
# Grafana's built-in interval variables, as the tests substitute them.
BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h"}
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


@dataclass(frozen=True, slots=True)
class Query:
    """One PromQL expression a dashboard runs, and where it sits."""

    dashboard: str
    where: str
    expr: str


def load_yaml(path: Path) -> Any:
    """A YAML file's content."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_dashboards() -> dict[str, dict[str, Any]]:
    """Every dashboard JSON, by file stem."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in DASHBOARD_FILES}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dashboard's template variables by name."""
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def queries(name: str, dashboard: dict[str, Any]) -> list[Query]:
    """Every PromQL expression: panel targets and annotation queries."""
    found = [
        Query(name, f"panel {p['id']} {p['title']!r} target {t['refId']}", t["expr"])
        for p in panels(dashboard)
        for t in p.get("targets", [])
        if "expr" in t
    ]
    found += [
        Query(name, f"annotation {a['name']!r}", a["expr"])
        for a in dashboard["annotations"]["list"]
        if "expr" in a
    ]
    return found


def all_values(dashboard: dict[str, Any]) -> dict[str, str]:
    """Every template variable as a newcomer finds it: "All" (its ``allValue``, else
    ``.*``), a custom variable at its default, a text box at its default."""
    values = {}
    for name, var in variables(dashboard).items():
        if var["type"] == "custom":
            values[name] = var["current"]["value"]
        else:
            values[name] = var.get("allValue") or ".*"
    return values


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of every Prometheus rule file."""
    return [
        rule
        for path in RULE_FILES
        for group in load_yaml(path)["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def metric_spec(prometheus_name: str) -> MetricSpec | None:
    """The semconv spec a Prometheus series name belongs to (histogram suffixes too)."""
    by_name = {spec.prometheus: spec for spec in semconv.ALL_METRICS}
    if prometheus_name in by_name:
        return by_name[prometheus_name]
    for suffix in _HISTOGRAM_SUFFIXES:
        base = prometheus_name.removesuffix(suffix)
        spec = by_name.get(base)
        if base != prometheus_name and spec is not None and spec.kind == "histogram":
            return spec
    return None


def metric_labels(spec: MetricSpec) -> frozenset[str]:
    """The labels a series of ``spec`` can carry."""
    own = {semconv.prometheus_label(a) for a in spec.attributes}
    return frozenset(own) | STANDARD_LABELS


def known_labels() -> frozenset[str]:
    """Every label any of our series can carry."""
    return frozenset().union(*(metric_labels(s) for s in semconv.ALL_METRICS))


def tool(name: str) -> str:
    """The path of a Prometheus tool; fails (never skips) when it is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: run scripts/install-system-deps "
            "(Debian packages prometheus and prometheus-alertmanager)"
        )
    return path


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tool with a fixed argv and capture its output."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def load_tool(name: str) -> ModuleType:
    """A script of ``dashboards/tools`` imported as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(name, DASHBOARDS / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
