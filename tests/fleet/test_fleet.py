"""End to end, as a fleet runs it: the real Collector's load balancer, two replicas, Jaeger,
Prometheus and Alertmanager, fed by the demo's instrumented agents (tests/fleet/conftest.py)."""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.processor.extract import ItemKind
from tests.dashboards import stack
from tests.fleet.conftest import FleetRun, metric_sum, routed_spans
from tests.fleet.fleet import PROCESSOR_JOB

pytestmark = [pytest.mark.slow, pytest.mark.prometheus]

LIVELOCK_ALERT = "CompactionReexpansionLivelock"
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
