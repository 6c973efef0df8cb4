"""End to end, as a fleet runs it: the real Collector's load balancer, two replicas, Jaeger,
Prometheus and Alertmanager, fed by the demo's instrumented agents (tests/fleet/conftest.py).

The last test runs the dashboards' Jaeger links against the real Jaeger query API: each
``${jaeger_url}/search?...`` link is filled in as a person following it would (service
``demo-agent``, the livelocked conversation, the clicked finding kind) and sent to
``/api/traces`` with the same parameters; every trace it returns must hold a span of
that service matching the link's operation and tags, and the links the demo's runs can
satisfy must find some.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.otlp.extract import ItemKind
from tests.dashboards import stack
from tests.dashboards.catalog import load_dashboards
from tests.fleet.conftest import LIVELOCK_SCENARIO, FleetRun, metric_sum, routed_spans
from tests.fleet.fleet import PROCESSOR_JOB

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

LIVELOCK_ALERT = "CompactionReexpansionLivelock"
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


PROCESSOR_SERVICE = "otel-compaction-processor"  # output.service_name's default


def jaeger_traces(run: FleetRun, **params: str) -> list[dict[str, Any]]:
    """``/api/traces`` of the fleet's Jaeger over the last hour."""
    now_us = int(time.time() * 1e6)
    query = {"start": str(now_us - 3_600_000_000), "end": str(now_us), "limit": "1000", **params}
    url = f"http://{run.fleet.ports.at('jaeger_query_http')}/api/traces?"
    body = json.loads(stack.http(url + urllib.parse.urlencode(query)))
    assert not body.get("errors"), body["errors"]
    traces: list[dict[str, Any]] = body["data"] or []
    return traces


def tags(span: dict[str, Any]) -> dict[str, Any]:
    """A Jaeger span's tags as a dict."""
    return {tag["key"]: tag["value"] for tag in span["tags"]}


def test_every_conversation_reaches_exactly_one_replica(fleet_run: FleetRun) -> None:
    """Burst A: the replicas received every span the filter passed, and each of its
    conversations is held by one replica only (their counts add up to the number of
    conversations, which a conversation split over both would exceed)."""
    conversations = set(fleet_run.a.read.values())
    assert sum(fleet_run.received_after_a.values()) == len(fleet_run.a.read)
    assert sum(fleet_run.conversations_after_a.values()) == len(conversations), (
        fleet_run.conversations_after_a,
        sorted(conversations),
    )


def test_the_tap_filter_passes_exactly_the_spans_the_processor_reads(fleet_run: FleetRun) -> None:
    """What the Collector's filter/compaction-inputs let through to the load balancer is,
    span for span, what the processor's extract reads in the agents' own files."""
    expected = fleet_run.a.read | fleet_run.b.read
    path = fleet_run.fleet.folder / "routed.jsonl"
    path = fleet_run.fleet.folder / "routed.jsonl"

    def flushed() -> dict[bytes, str] | None:
        routed = routed_spans(path)  # the file exporter flushes on its own schedule
        return routed if len(routed) >= len(expected) else None

    routed = stack.wait_for("the file exporter", flushed)
    assert routed == expected


def test_findings_are_spans_in_their_conversations_trace_in_jaeger(fleet_run: FleetRun) -> None:
    """Each finding of the agents' runs is a compaction.finding span found in Jaeger by its
    kind tag, in the trace and under the compaction span it is about; no other."""
    expected = {
        (f.kind.value, f.conversation_id, f.compaction_id, f.turn)
        for burst in (fleet_run.a, fleet_run.b)
        for f in burst.result.report.findings
    }
    assert expected, "the demo's scenarios raise findings"
    found = stack.wait_for(
        "every finding in Jaeger", lambda: _findings_in_jaeger(fleet_run, expected)
    )
    assert found == expected


def _findings_in_jaeger(run: FleetRun, expected: set[Any]) -> set[Any] | None:
    found = set()
    for kind in {kind for kind, *_ in expected}:
        tag = json.dumps({sc.FINDING_KIND: kind})
        for trace in jaeger_traces(run, service=PROCESSOR_SERVICE, tags=tag):
            by_id = {span["spanID"]: span for span in trace["spans"]}
            for span in trace["spans"]:
                if span["operationName"] != sc.SPAN_FINDING:
                    continue
                attrs = tags(span)
                # Jaeger's first reference is the parent: FOLLOWS_FROM, not CHILD_OF, since
                # the finding also links to it (Jaeger's translator lets the link win).
                parent = span["references"][0]["spanID"]
                compaction = tags(by_id[parent])  # the agent's span, in the same trace
                assert by_id[parent]["operationName"] == sc.SPAN_COMPACTION
                assert compaction[sc.COMPACTION_ID] == attrs[sc.COMPACTION_ID]
                assert compaction[sc.CONVERSATION_ID] == attrs[sc.CONVERSATION_ID]
                found.add(
                    (attrs[sc.FINDING_KIND], attrs[sc.CONVERSATION_ID], attrs[sc.COMPACTION_ID],
                     attrs[sc.TURN_INDEX])
                )  # fmt: skip
    return found if found >= expected else None


def test_the_livelock_alert_fires_for_the_processors_and_is_routed(fleet_run: FleetRun) -> None:
    """Prometheus, scraping the replicas, fires CompactionReexpansionLivelock for the
    processor's job, and Alertmanager routes it to the on-call receiver."""
    api = stack.PrometheusAPI(fleet_run.fleet.ports.port["prometheus"])
    alert = stack.wait_for("the alert", lambda: api.firing(LIVELOCK_ALERT, job=PROCESSOR_JOB))
    assert alert["labels"]["severity"] == "critical"
    am = fleet_run.fleet.ports.port["alertmanager"]
    receivers = stack.wait_for(
        "alertmanager", lambda: stack.alertmanager_receivers(am, LIVELOCK_ALERT, job=PROCESSOR_JOB)
    )
    assert receivers == ["compaction-oncall"]


def test_prometheus_scrapes_the_agents_metrics_from_the_collector(fleet_run: FleetRun) -> None:
    """The LB Collector's prometheus exporter serves the agents' own findings counter,
    labelled with their service: Prometheus stores it beside the replicas'."""
    api = stack.PrometheusAPI(fleet_run.fleet.ports.port["prometheus"])
    expr = (
        f'sum({sc.METRIC_FINDINGS.prometheus}{{service_name="demo-agent",'
        f'{sc.FINDING_KIND.replace(".", "_")}="reexpansion_livelock"}})'
    )
    livelocks = sum(
        f.kind is sc.FindingKind.REEXPANSION_LIVELOCK for f in fleet_run.b.result.report.findings
    )

    def stored() -> float | None:
        result = api.query(expr)
        return float(result[0]["value"][1]) if result else None

    assert stack.wait_for("the agents' counter", stored) == livelocks


def test_a_replica_sigkilled_with_a_burst_in_its_window_loses_no_span(fleet_run: FleetRun) -> None:
    """The replica holding burst B, SIGKILLed before applying any of it, had every
    accepted span on disk; restarted, it applied each one and raised the findings."""
    b = fleet_run.b
    assert fleet_run.raw_items_at_kill == len(b.read)
    b_conversations = set(b.read.values())
    assert not [f for f in fleet_run.life1_findings if f["conversation_id"] in b_conversations]
    life2 = fleet_run.life2_metrics
    assert metric_sum(life2, sc.METRIC_COMPACTIONS) == b.count(ItemKind.COMPACTION)
    assert metric_sum(life2, sc.METRIC_TOKEN_FRACTION, "_count") == b.count(ItemKind.TURN)
    for reason in (sc.ProcessorReason.LATE, sc.ProcessorReason.DUPLICATE):
        labels = {sc.PROCESSOR_REASON.replace(".", "_"): reason.value}
        assert metric_sum(life2, sc.METRIC_PROCESSOR_REJECTED, **labels) == 0, reason
    logged = fleet_run.fleet.findings_logged(fleet_run.holder, 2)
    assert sorted((f["kind"], f["turn"]) for f in logged) == sorted(
        (f.kind.value, f.turn) for f in b.result.report.findings
    )


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
