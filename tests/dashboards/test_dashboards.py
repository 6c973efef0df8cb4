"""Grafana dashboards: provisionable JSON whose queries parse and name only semconv series."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from otel_compaction import semconv
from tests.dashboards import promql
from tests.dashboards.catalog import (
    BUILTINS,
    DASHBOARD_FILES,
    SCRAPE_SERIES,
    all_values,
    known_labels,
    load_dashboards,
    metric_labels,
    metric_spec,
    panels,
    queries,
    run,
    tool,
    variables,
)

DASHBOARDS = load_dashboards()
OVERVIEW = DASHBOARDS["compaction-overview"]
DRILLDOWN = DASHBOARDS["conversation-drilldown"]
ALL_QUERIES = [q for name, d in DASHBOARDS.items() for q in queries(name, d)]
_QUERY_IDS = [f"{q.dashboard}: {q.where}" for q in ALL_QUERIES]
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_LINK_VARIABLE = re.compile(r"\$\{([\w.]+)(?::\w+)?\}")
_DATASOURCE_VARIABLES = {"prometheus": "${datasource}", "jaeger": "${jaeger}"}


def _walk(node: Any) -> Any:
    """Every dict inside a JSON document."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _expanded(expr: str, dashboard: str) -> str:
    """``expr`` with every variable set to "All" and the built-ins to fixed intervals."""
    return promql.substitute(expr, all_values(DASHBOARDS[dashboard]), BUILTINS)


def test_both_dashboards_exist() -> None:
    """The overview and the drill-down are the two provisioned dashboards."""
    assert {p.stem for p in DASHBOARD_FILES} == {"compaction-overview", "conversation-drilldown"}


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_is_provisionable(name: str) -> None:
    """Each dashboard has a uid, title, schemaVersion, datasource variable and placed panels."""
    dash = DASHBOARDS[name]
    assert re.fullmatch(r"[a-z0-9-]{1,40}", dash["uid"])
    assert dash["title"]
    assert dash["schemaVersion"] >= 39
    assert "id" not in dash, "a provisioned dashboard must not carry a database id"
    ds = variables(dash)["datasource"]
    assert (ds["type"], ds["query"]) == ("datasource", "prometheus")
    ids = [p["id"] for p in panels(dash)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(dash):
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("x", "y", "w", "h")), panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] not in ("row", "text"):
            assert panel["targets"], panel["title"]
            assert panel.get("description"), f"{panel['title']}: say what the panel shows"


def test_uids_are_unique() -> None:
    """No two dashboards share a uid."""
    uids = [d["uid"] for d in DASHBOARDS.values()]
    assert len(uids) == len(set(uids))


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_datasources_come_from_variables(name: str) -> None:
    """Every datasource reference uses a template variable, never a hard-coded uid."""
    for node in _walk(DASHBOARDS[name]):
        ref = node.get("datasource")
        if not isinstance(ref, dict):
            continue
        if ref.get("type") == "grafana":  # Grafana's built-in annotation source
            assert ref["uid"] == "-- Grafana --"
            continue
        assert ref.get("uid") == _DATASOURCE_VARIABLES[ref["type"]], ref


def test_every_query_parses_with_promtool(tmp_path: Path) -> None:
    """Each panel and annotation query, variables substituted, is valid PromQL to promtool."""
    rules = [
        {"record": f"dashboard_check:q{i}", "expr": _expanded(q.expr, q.dashboard)}
        for i, q in enumerate(ALL_QUERIES)
    ]
    rule_file = tmp_path / "dashboard-queries.rules.yaml"
    rule_file.write_text(json.dumps({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = run(tool("promtool"), "check", "rules", str(rule_file))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


@pytest.mark.parametrize("query", ALL_QUERIES, ids=_QUERY_IDS)
def test_query_names_only_semconv_metrics_and_labels(query: Any) -> None:
    """Every metric is a semconv metric's Prometheus name and every label one it carries."""
    found = promql.names(_expanded(query.expr, query.dashboard))
    assert found.metrics, "a query without a metric"
    for metric in found.metrics - SCRAPE_SERIES:
        spec = metric_spec(metric)
        assert spec is not None, f"{metric} is not a semconv metric's Prometheus name"
        labels = {m.label for m in found.matchers if m.metric == metric}
        assert labels <= metric_labels(spec), f"{metric}: {labels - metric_labels(spec)}"
    assert found.grouping <= known_labels(), found.grouping - known_labels()


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_legends_and_variables_use_known_labels(name: str) -> None:
    """Legends name labels the query keeps; label_values() variables name labels we emit."""
    dash = DASHBOARDS[name]
    templated = [
        (t["expr"], t.get("legendFormat", "")) for p in panels(dash) for t in p.get("targets", [])
    ]
    templated += [
        (a["expr"], a.get("textFormat", "")) for a in dash["annotations"]["list"] if "expr" in a
    ]
    for expr, template in templated:
        used = set(_LEGEND_LABEL.findall(template))
        # Every query aggregates, so only its grouping labels survive to the legend.
        assert used <= promql.names(expr).grouping, (expr, used)
    for var in variables(dash).values():
        if var["type"] != "query":
            continue
        selector, label = promql.label_values(var["query"]["query"])
        assert label in known_labels(), label
        assert selector is not None
        spec = metric_spec(next(iter(promql.names(_expanded(selector, name)).metrics)))
        assert spec is not None, var["name"]
        assert label in metric_labels(spec), var["name"]


def test_overview_shows_what_the_issue_asks_for() -> None:
    """The overview charts compactions, findings, livelock, fractions, cycles and lineage."""
    used = set().union(
        *(
            promql.names(_expanded(q.expr, q.dashboard)).metrics
            for q in ALL_QUERIES
            if q.dashboard == "compaction-overview"
        )
    )
    specs = {metric_spec(m) for m in used}
    for spec in (
        semconv.METRIC_COMPACTIONS,
        semconv.METRIC_FINDINGS,
        semconv.METRIC_LIVELOCKED,
        semconv.METRIC_COMPACTION_TOKEN_FRACTION,
        semconv.METRIC_INTERVAL,
        semconv.METRIC_RECLAIMED,
        semconv.METRIC_GENERATION,
        semconv.METRIC_RESIDUAL,
    ):
        assert spec in specs, spec.name
    by_source_mode = {
        semconv.prometheus_label(semconv.COMPACTION_SOURCE),
        semconv.prometheus_label(semconv.COMPACTION_MODE),
    }
    grouped = [
        promql.names(q.expr).grouping for q in ALL_QUERIES if q.dashboard == "compaction-overview"
    ]
    assert by_source_mode in grouped
    assert {semconv.prometheus_label(semconv.FINDING_KIND)} in grouped


def test_drilldown_filters_every_query_by_service_and_agent() -> None:
    """Drill-down variables select service_name and instance, and every query uses both."""
    var = variables(DRILLDOWN)
    assert promql.label_values(var["service"]["query"]["query"])[1] == "service_name"
    assert promql.label_values(var["agent"]["query"]["query"])[1] == "instance"
    for query in queries("conversation-drilldown", DRILLDOWN):
        assert 'service_name=~"$service"' in query.expr, query.where
        assert 'instance=~"$agent"' in query.expr, query.where


def test_drilldown_histograms_show_exemplars() -> None:
    """Histogram panels of the drill-down ask for exemplars (they carry the trace id)."""
    heatmaps = [p for p in panels(DRILLDOWN) if p["type"] == "heatmap"]
    assert heatmaps
    for panel in heatmaps:
        assert all(t.get("exemplar") and t.get("format") == "heatmap" for t in panel["targets"])


def _links(dashboard: dict[str, Any]) -> list[str]:
    urls = [link["url"] for link in dashboard.get("links", [])]
    for panel in panels(dashboard):
        urls += [
            link["url"]
            for link in panel.get("fieldConfig", {}).get("defaults", {}).get("links", [])
        ]
        if panel["type"] == "text":
            urls += re.findall(r"\]\(([^)]+)\)", panel["options"]["content"])
    return urls


def _jaeger_search_tags(url: str) -> dict[str, str] | None:
    """The tags of a Jaeger UI search link, or of an Explore link's Jaeger query."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.path.endswith("/search") and "tags" in query:
        tags: dict[str, str] = json.loads(query["tags"][0])
        return tags
    if parts.path == "/explore":
        pane = next(iter(json.loads(query["panes"][0]).values()))
        logfmt = pane["queries"][0]["tags"]
        return dict(pair.split("=", 1) for pair in logfmt.split())
    return None


def test_drilldown_links_open_jaeger_search_by_conversation_and_flag() -> None:
    """Links search Jaeger for compaction.conversation.id and every compaction.flag.* key."""
    searched: set[str] = set()
    for url in _links(DRILLDOWN):
        tags = _jaeger_search_tags(url)
        if tags is not None:
            assert set(tags) <= semconv.all_attribute_names(), tags
            searched.update(tags)
    flags = set(semconv.FLAG_BY_KIND.values())  # one flag per finding kind
    assert semconv.CONVERSATION_ID in searched
    assert flags <= searched, flags - searched


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_links_use_only_defined_variables(name: str) -> None:
    """Every ${variable} in a link is a template variable or a Grafana field/built-in one."""
    dash = DASHBOARDS[name]
    defined = set(variables(dash))
    for url in _links(dash):
        for var in _LINK_VARIABLE.findall(url):
            assert var in defined or var.startswith("__field.labels."), (url, var)
            if var.startswith("__field.labels."):
                assert var.removeprefix("__field.labels.") in known_labels(), var


def test_no_histogram_has_negative_buckets() -> None:
    """The OTel SDK drops negative histogram values and prometheus_client then drops _sum/_count."""
    signed = [s.name for s in semconv.ALL_METRICS if s.buckets and s.buckets[0] < 0]
    assert not signed
