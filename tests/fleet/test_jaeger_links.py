"""The dashboards' Jaeger links, run against the real Jaeger query API of the fleet run.

Each ``${jaeger_url}/search?...`` link of the drill-down is filled in as a person
following it would (service ``demo-agent``, the livelocked conversation, the
clicked finding kind) and sent to ``/api/traces`` with the same parameters; its
results must be exactly the traces that hold a span of that service matching the
link's operation and tags, and the links the demo's runs can satisfy must find some.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from otel_compaction import semconv as sc
from tests.dashboards.catalog import load_dashboards
from tests.fleet.conftest import LIVELOCK_SCENARIO, FleetRun
from tests.fleet.test_fleet import jaeger_traces, tags

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

AGENT_SERVICE = "demo-agent"  # service.name of the demo's agents
_LINK = re.compile(r"\$\{jaeger_url\}/search\?[^)\s\"\\]+")
# What a person following a link would have selected or clicked.
_VALUES = {
    "${service:percentencode}": AGENT_SERVICE,
    "${__field.labels.compaction_finding_kind:percentencode}": "reexpansion_livelock",
}
# Links the demo's runs must find something for (the other flags it never raises).
MUST_FIND = {
    (): "compaction spans",
    ((sc.CONVERSATION_ID, "*"),): "the conversation",
    ((sc.FLAG_BY_KIND[sc.FindingKind.REEXPANSION_LIVELOCK], "true"),): "livelock flags",
    ((sc.FLAG_BY_KIND[sc.FindingKind.BOUNDARY_COMPACTION], "true"),): "boundary flags",
    ((sc.FINDING_KIND, "reexpansion_livelock"),): "finding spans",
}


def links() -> Iterator[str]:
    """Every Jaeger search link in the dashboards, as written."""
    for dashboard in load_dashboards().values():
        yield from sorted(set(_LINK.findall(json.dumps(dashboard))))


def _fill(link: str, conversation: str) -> dict[str, str]:
    for placeholder, value in {**_VALUES, "${conversation:percentencode}": conversation}.items():
        link = link.replace(placeholder, urllib.parse.quote(value, safe=""))
    query = link.split("?", 1)[1]  # ${jaeger_url} is where Jaeger is: here, the fleet's
    assert "${" not in query, link
    return dict(urllib.parse.parse_qsl(query))


def _matches(
    span: dict[str, Any], service: str, operation: str | None, wanted: dict[str, str]
) -> bool:
    if span["process"]["serviceName"] != service:
        return False
    if operation is not None and span["operationName"] != operation:
        return False
    found = {
        key: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in tags(span).items()
    }
    return all(found.get(key) == value for key, value in wanted.items())


def _check(run: FleetRun, params: dict[str, str]) -> list[dict[str, Any]]:
    """The link's results, each checked to hold a span the link asked for."""
    query = {k: params[k] for k in ("service", "operation", "tags") if k in params}
    traces = jaeger_traces(run, **query)
    wanted = json.loads(params.get("tags", "{}"))
    for trace in traces:
        for span in trace["spans"]:
            span["process"] = trace["processes"][span["processID"]]
        assert any(
            _matches(s, params["service"], params.get("operation"), wanted) for s in trace["spans"]
        )
    return traces


def test_every_dashboard_jaeger_link_finds_what_it_names(fleet_run: FleetRun) -> None:
    """Each link's Jaeger search returns only traces with a matching span, and the
    conversation, compaction, flag and finding links find the demo's."""
    conversation = next(
        f.conversation_id for f in fleet_run.b.result.report.findings
    )  # the livelocked conversation of LIVELOCK_SCENARIO
    assert LIVELOCK_SCENARIO in conversation
    found: dict[tuple[tuple[str, str], ...], int] = {}
    for link in links():
        params = _fill(link, conversation)
        wanted = json.loads(params.get("tags", "{}"))
        key = tuple(sorted((k, "*" if k == sc.CONVERSATION_ID else v) for k, v in wanted.items()))
        found[key] = found.get(key, 0) + len(_check(fleet_run, params))
    empty = [what for key, what in MUST_FIND.items() if not found.get(key)]
    assert not empty, f"links that found nothing: {empty} (all: {found})"
