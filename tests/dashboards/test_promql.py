"""The PromQL name reader the other tests rely on finds every metric and label."""

from __future__ import annotations

import pytest

from tests.dashboards import promql


def test_reads_metrics_matchers_and_grouping_of_a_compound_expression() -> None:
    """Metrics on both sides of operators, matchers, and by/on/without lists are all found."""
    found = promql.names(
        'sum by (job, le) (rate(a_bucket{le="0.92", job=~".*"}[5m] offset 1h))'
        ' / on (job) group_left (instance) max without (x) (b) > 0 and c{k!="v"}'
    )
    assert found.metrics == {"a_bucket", "b", "c"}
    assert found.grouping == {"job", "le", "instance", "x"}
    assert [(m.metric, m.label, m.op, m.value) for m in found.matchers] == [
        ("a_bucket", "le", "=", "0.92"),
        ("a_bucket", "job", "=~", ".*"),
        ("c", "k", "!=", "v"),
    ]


def test_grouping_before_the_arguments_is_not_a_metric() -> None:
    """`sum by (le) (x)` names the metric x, not sum."""
    assert promql.names("histogram_quantile(0.5, sum by (le) (x))").metrics == {"x"}


def test_substitute_replaces_builtins_and_variables_and_refuses_unknown_ones() -> None:
    """Grafana's $__ built-ins and ${var:format} are replaced; an undefined one raises."""
    expr = 'rate(x{a=~"$a", b=~"${b:regex}"}[$__rate_interval])'
    assert promql.substitute(expr, {"a": ".*", "b": "y"}, {"__rate_interval": "1m"}) == (
        'rate(x{a=~".*", b=~"y"}[1m])'
    )
    with pytest.raises(KeyError):
        promql.substitute('x{a=~"$missing"}', {}, {})


def test_label_values_query_is_split_into_selector_and_label() -> None:
    """label_values(selector, label) gives both parts; other text is refused."""
    assert promql.label_values('label_values(m{a=~"$s"}, instance)') == ('m{a=~"$s"}', "instance")
    with pytest.raises(ValueError, match="label_values"):
        promql.label_values("up")
