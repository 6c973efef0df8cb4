"""Prometheus alert rules: valid, unit-tested per alert, named after semconv, with runbooks."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from otel_compaction import semconv
from otel_compaction.config import Settings
from tests.dashboards import promql
from tests.dashboards.catalog import (
    RULE_FILES,
    RULE_TEST_FILES,
    RUNBOOKS,
    SCRAPE_SERIES,
    alert_rules,
    known_labels,
    load_yaml,
    metric_labels,
    metric_spec,
    run,
    tool,
)

ALERTS = alert_rules()
ALERT_NAMES = [r["alert"] for r in ALERTS]
_TEMPLATE_LABEL = re.compile(r"\$labels\.(\w+)")


@pytest.mark.prometheus
def test_promtool_checks_every_rule_file() -> None:
    """`promtool check rules` accepts every rule file."""
    result = run(tool("promtool"), "check", "rules", *map(str, RULE_FILES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_pass() -> None:
    """`promtool test rules` passes every unit test of the alert rules."""
    assert RULE_TEST_FILES, "no promtool unit-test files in dashboards/alerts/tests"
    for path in RULE_TEST_FILES:
        result = run(tool("promtool"), "test", "rules", path.name, cwd=path.parent)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_case_and_a_quiet_case() -> None:
    """Each alert is unit-tested both firing (with its labels) and staying quiet."""
    fires: dict[str, int] = defaultdict(int)
    quiet: dict[str, int] = defaultdict(int)
    for path in RULE_TEST_FILES:
        for case in load_yaml(path)["tests"]:
            for check in case.get("alert_rule_test", []):
                name = check["alertname"]
                if check.get("exp_alerts"):
                    fires[name] += 1
                    for alert in check["exp_alerts"]:
                        assert alert.get("exp_annotations"), f"{name}: check the annotations"
                else:
                    quiet[name] += 1
    for name in ALERT_NAMES:
        assert fires[name] >= 1, f"{name}: no unit test where it fires"
        assert quiet[name] >= 2, f"{name}: needs near-miss unit tests where it stays quiet"
    assert set(fires) | set(quiet) <= set(ALERT_NAMES), "unit tests name an unknown alert"


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_alert_names_only_semconv_metrics_and_labels(rule: dict[str, str]) -> None:
    """Every metric in the expression is a semconv metric under its Prometheus name."""
    found = promql.names(rule["expr"])
    assert found.metrics, "an alert expression without a metric"
    for metric in found.metrics - SCRAPE_SERIES:
        spec = metric_spec(metric)
        assert spec is not None, f"{metric} is not a semconv metric's Prometheus name"
        labels = {m.label for m in found.matchers if m.metric == metric}
        assert labels <= metric_labels(spec), f"{metric}: unknown labels"
    assert found.grouping <= known_labels()


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_alert_matchers_use_emitted_values(rule: dict[str, str]) -> None:
    """Matcher values are values the emit layer writes (finding kinds, bucket bounds)."""
    enums = {
        semconv.prometheus_label(semconv.FINDING_KIND): {k.value for k in semconv.FindingKind},
        semconv.prometheus_label(semconv.COMPACTION_SOURCE): {
            s.value for s in semconv.CompactionSource
        },
        semconv.prometheus_label(semconv.COMPACTION_MODE): {
            m.value for m in semconv.CompactionMode
        },
    }
    for matcher in promql.names(rule["expr"]).matchers:
        if matcher.label == "le":
            spec = metric_spec(matcher.metric or "")
            assert spec is not None
            assert float(matcher.value) in (spec.buckets or ()), matcher
        elif matcher.label in enums and matcher.op == "=":
            assert matcher.value in enums[matcher.label], matcher


def test_hard_ceiling_alerts_use_the_configured_ceiling() -> None:
    """The le="0.92" the ceiling alerts read is the default hard ceiling and a bucket bound."""
    ceiling = Settings.from_env({}).hard_ceiling
    assert ceiling in semconv.FRACTION_BUCKETS
    ceiling_rules = [r for r in ALERTS if "HardCeiling" in r["alert"]]
    assert len(ceiling_rules) == 2
    for rule in ceiling_rules:
        bounds = {m.value for m in promql.names(rule["expr"]).matchers if m.label == "le"}
        assert bounds == {str(ceiling)}, rule["alert"]


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_alert_has_severity_summary_and_runbook(rule: dict[str, object]) -> None:
    """Each alert has a severity, a summary naming labels, a description and a runbook page."""
    labels = rule["labels"]
    annotations = rule["annotations"]
    assert isinstance(labels, dict)
    assert isinstance(annotations, dict)
    assert labels["severity"] in ("critical", "warning")
    assert "{{ $labels." in annotations["summary"]
    assert annotations["description"].strip()
    assert annotations["runbook_url"] == f"docs/runbooks/{rule['alert']}.md"
    used = set(_TEMPLATE_LABEL.findall(annotations["summary"] + annotations["description"]))
    assert used <= known_labels(), used - known_labels()


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_runbook_says_what_it_means_how_to_confirm_and_what_to_change(name: str) -> None:
    """Each alert's runbook page has the three sections an on-call reader needs."""
    page = (RUNBOOKS / f"{name}.md").read_text(encoding="utf-8")
    assert page.startswith(f"# {name}\n")
    for heading in ("## What it means", "## Confirm it in Jaeger", "## What to change"):
        assert heading in page, f"{name}.md lacks {heading!r}"


def test_livelock_alerts_confirm_with_the_semconv_search_tags() -> None:
    """The livelock runbooks tell the reader the exact Jaeger search tags."""
    for name in ("CompactionReexpansionLivelock", "CompactionConversationsLivelocked"):
        page = (RUNBOOKS / f"{name}.md").read_text(encoding="utf-8")
        assert f"{semconv.FLAG_LIVELOCK}=true" in page
        assert semconv.CONVERSATION_ID in page


def test_counter_alerts_compare_with_greater_than() -> None:
    """No alert tests a counter's increase for equality: increase() extrapolates."""
    for rule in ALERTS:
        assert "==" not in rule["expr"], rule["alert"]
        # The first-events idiom's own `count_over_time(...) < scalar(...)` counts samples.
        outer = re.sub(r"count_over_time\([^()]*\)\s*<\s*scalar", "", rule["expr"])
        assert not re.search(r"\)\s*(>=|<)", outer), rule["alert"]


def test_processor_runbooks_explain_every_reason() -> None:
    """Each compaction.processor.reason value is explained in a processor runbook."""
    pages = "".join(
        (RUNBOOKS / f"{name}.md").read_text(encoding="utf-8")
        for name in ("CompactionProcessorRejecting", "CompactionProcessorDropping")
    )
    missing = [r.value for r in semconv.ProcessorReason if f"`{r.value}`" not in pages]
    assert not missing, missing


def test_instrumentation_runbook_explains_every_error_stage() -> None:
    """Each compaction.error.stage value is explained in the instrumentation-errors runbook."""
    page = (RUNBOOKS / "CompactionInstrumentationErrors.md").read_text(encoding="utf-8")
    missing = [stage for stage in semconv.ERROR_STAGES if f"`{stage}`" not in page]
    assert not missing, missing
