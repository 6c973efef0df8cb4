"""Grafana provisioning (data sources, dashboards, alert rules) and the Alertmanager example."""

from __future__ import annotations

import re

import pytest

from tests.dashboards.catalog import (
    ALERTMANAGER_CONFIG,
    GRAFANA_ALERTS,
    PROVISIONING,
    alert_rules,
    load_tool,
    load_yaml,
    run,
    tool,
)

DATASOURCES = load_yaml(PROVISIONING / "datasources" / "otel-compaction.yaml")
PROVIDERS = load_yaml(PROVISIONING / "dashboards" / "otel-compaction.yaml")
GRAFANA_RULES = {
    rule["title"]: rule for group in load_yaml(GRAFANA_ALERTS)["groups"] for rule in group["rules"]
}
PROMETHEUS_RULES = {rule["alert"]: rule for rule in alert_rules()}


def test_datasources_provision_prometheus_and_jaeger() -> None:
    """Prometheus and Jaeger are provisioned with fixed, unique uids; exemplars link to Jaeger."""
    assert DATASOURCES["apiVersion"] == 1
    by_type = {ds["type"]: ds for ds in DATASOURCES["datasources"]}
    assert {"prometheus", "jaeger"} <= set(by_type)
    uids = [ds["uid"] for ds in DATASOURCES["datasources"]]
    assert len(uids) == len(set(uids))
    assert all(ds["url"].startswith("http://") for ds in DATASOURCES["datasources"])
    [exemplar] = by_type["prometheus"]["jsonData"]["exemplarTraceIdDestinations"]
    assert exemplar["datasourceUid"] == by_type["jaeger"]["uid"]
    assert exemplar["name"] == "trace_id"


def test_dashboard_provider_loads_files() -> None:
    """The dashboard provider is a file provider with a path (compose mounts it)."""
    assert PROVIDERS["apiVersion"] == 1
    [provider] = PROVIDERS["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"].startswith("/")


def test_grafana_alerts_are_generated_from_the_prometheus_rules() -> None:
    """The committed Grafana alert provisioning is exactly what the generator writes now."""
    assert GRAFANA_ALERTS.read_text(encoding="utf-8") == load_tool("grafana_alerts").render(), (
        "run: .venv/bin/python dashboards/tools/grafana_alerts.py"
    )


def test_grafana_alerts_are_the_prometheus_alerts() -> None:
    """Same alerts, expressions, delays, labels and runbooks in both alerting systems."""
    assert set(GRAFANA_RULES) == set(PROMETHEUS_RULES)
    for name, prom in PROMETHEUS_RULES.items():
        graf = GRAFANA_RULES[name]
        query = next(d for d in graf["data"] if d["refId"] == "A")
        assert query["model"]["expr"] == prom["expr"].strip()
        assert graf["for"] == prom.get("for", "0s")
        assert graf["labels"] == prom["labels"]
        assert set(graf["annotations"]) == set(prom["annotations"])
        assert graf["annotations"]["runbook_url"] == prom["annotations"]["runbook_url"]
        assert "$value " not in graf["annotations"]["description"]


def test_grafana_alerts_are_provisionable() -> None:
    """apiVersion 1, unique uids, a condition among the queries, provisioned data sources."""
    doc = load_yaml(GRAFANA_ALERTS)
    assert doc["apiVersion"] == 1
    uids = [r["uid"] for r in GRAFANA_RULES.values()]
    assert len(uids) == len(set(uids))
    provisioned = {ds["uid"] for ds in DATASOURCES["datasources"]} | {"__expr__"}
    for group in doc["groups"]:
        assert group["orgId"] == 1
        assert group["folder"]
        assert group["interval"]
    for rule in GRAFANA_RULES.values():
        refs = {d["refId"] for d in rule["data"]}
        assert rule["condition"] in refs
        assert {d["datasourceUid"] for d in rule["data"]} <= provisioned
        assert rule["noDataState"] == "OK"


@pytest.mark.prometheus
def test_amtool_accepts_the_alertmanager_example() -> None:
    """`amtool check-config` accepts the example Alertmanager configuration."""
    result = run(tool("amtool"), "check-config", str(ALERTMANAGER_CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.prometheus
@pytest.mark.parametrize(
    ("severity", "receiver"),
    [("critical", "compaction-oncall"), ("warning", "compaction-team")],
)
def test_alertmanager_routes_by_severity(severity: str, receiver: str) -> None:
    """Critical alerts page on-call; warnings go to the team (amtool routing test)."""
    labels = [f"severity={severity}", "alertname=CompactionReexpansionLivelock"]
    result = run(
        tool("amtool"), "config", "routes", "test", f"--config.file={ALERTMANAGER_CONFIG}", *labels
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receiver


def test_every_rule_severity_has_a_route() -> None:
    """Each severity the rules use has a route; inhibit rules name existing alerts."""
    config = load_yaml(ALERTMANAGER_CONFIG)
    routed = {m for r in config["route"]["routes"] for m in r["matchers"]}
    for rule in PROMETHEUS_RULES.values():
        assert f'severity="{rule["labels"]["severity"]}"' in routed
    for inhibit in config["inhibit_rules"]:
        for matcher in inhibit["source_matchers"] + inhibit["target_matchers"]:
            parts = re.fullmatch(r'(\w+)(=~|!=|=)"(.*)"', matcher)
            assert parts is not None, matcher
            label, op, value = parts.groups()
            if label == "alertname":
                names = value.split("|") if op == "=~" else [value]
                assert set(names) <= set(PROMETHEUS_RULES), matcher
            else:  # the processor's job: the path an inhibition tells apart
                assert (label, value) == ("job", "otel-compaction-processor"), matcher
