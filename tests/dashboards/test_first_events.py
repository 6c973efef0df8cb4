"""Every counted window in the rules and dashboards sees a series' first value.

``increase()`` and ``rate()`` need two samples of a series, so alone they miss a
series born with its first events counted (a short-lived agent's only export, a
histogram's first observation). Every count goes through the one idiom that
docs/dashboards.md#first-events explains and the promtool tests exercise.
"""

from __future__ import annotations

import re

import pytest

from tests.dashboards import promql
from tests.dashboards.catalog import BUILTINS, alert_rules, all_values, load_dashboards, queries

_COUNTED = re.compile(r"\b(rate|increase|irate)\((\w+(?:\{[^}]*\})?)\[([^\]]+)\]\)")
_DASHBOARDS = load_dashboards()
EXPRESSIONS = [(f"alert {r['alert']}", r["expr"]) for r in alert_rules()] + [
    (
        f"{q.dashboard}: {q.where}",
        promql.substitute(q.expr, all_values(_DASHBOARDS[q.dashboard]), BUILTINS),
    )
    for name, d in _DASHBOARDS.items()
    for q in queries(name, d)
]


def first_events(selector: str, window: str) -> str:
    """The idiom for the events of ``selector`` in ``window``, as the rules spell it."""
    return (
        f"(({selector} unless {selector} offset {window} and count_over_time({selector}[{window}])"
        f" < scalar(max(count_over_time(up[{window}]))) - 1) or increase({selector}[{window}]))"
    )


@pytest.mark.parametrize(("where", "expr"), EXPRESSIONS, ids=[w for w, _ in EXPRESSIONS])
def test_every_count_takes_new_series_whole(where: str, expr: str) -> None:
    """No bare rate() or increase(): each is the tail of the first-events idiom."""
    flat = " ".join(expr.split())
    for match in _COUNTED.finditer(flat):
        function, selector, window = match.groups()
        assert function == "increase", f"{where}: {function}() misses a new series"
        assert first_events(selector, window) in flat, f"{where}: bare {match.group()}"
