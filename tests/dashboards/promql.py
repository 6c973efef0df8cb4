"""Just enough PromQL lexing to name the metrics and labels a query uses.

Not a parser: ``promtool`` and Prometheus judge whether a query is valid. This
reads identifiers in context so the tests can check every metric and label
name against ``semconv``: an identifier before ``(`` is a function, one after
``by``/``without``/``on``/``ignoring``/``group_*`` opens a label list, one inside
``{...}`` is a matcher's label, and any other is a metric name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""
    (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<variable>\$\{\w+(?::\w+)?\}|\$\w+)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[{}(),=<>+\-*/^%@])
  | (?P<space>\s+)
    """,
    re.VERBOSE,
)
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"}) | _LABEL_LISTS
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
_LABEL_VALUES = re.compile(
    r"^\s*label_values\(\s*(?:(?P<selector>.+?)\s*,\s*)?(?P<label>\w+)\s*\)\s*$"
)


@dataclass(frozen=True, slots=True)
class Matcher:
    """One label matcher: ``metric{label op "value"}`` (metric may be None)."""

    metric: str | None
    label: str
    op: str
    value: str


@dataclass(slots=True)
class Names:
    """The metric names, matchers and grouping labels found in an expression."""

    metrics: set[str] = field(default_factory=set)
    matchers: list[Matcher] = field(default_factory=list)
    grouping: set[str] = field(default_factory=set)


def tokens(expr: str) -> list[tuple[str, str]]:
    """(kind, text) tokens without whitespace; raises ValueError on a stray character."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            raise ValueError(f"cannot lex {expr[pos : pos + 20]!r} in {expr!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            out.append((kind, match.group()))
        pos = match.end()
    return out


def names(expr: str) -> Names:
    """The metric names, label matchers and grouping labels ``expr`` uses."""
    toks = tokens(expr)
    found = Names()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "ident" and text in _LABEL_LISTS and following == "(":
            i = _label_list(toks, i + 2, found.grouping)
            continue
        if kind == "ident" and text == "offset":
            i += 3 if i + 2 < len(toks) and toks[i + 2][0] == "ident" else 2  # 5m lexes as 5, m
            continue
        # An aggregation may put its grouping first: ``sum by (le) (...)``.
        is_call = following == "(" or following in ("by", "without")
        if kind == "ident" and text not in _KEYWORDS and not is_call:
            found.metrics.add(text)
            if following == "{":
                i = _matchers(toks, i + 2, text, found.matchers)
                continue
        elif text == "{":
            i = _matchers(toks, i + 1, None, found.matchers)
            continue
        i += 1
    return found


def _label_list(toks: list[tuple[str, str]], i: int, into: set[str]) -> int:
    while i < len(toks) and toks[i][1] != ")":
        if toks[i][0] == "ident":
            into.add(toks[i][1])
        i += 1
    return i + 1


def _matchers(toks: list[tuple[str, str]], i: int, metric: str | None, into: list[Matcher]) -> int:
    while i < len(toks) and toks[i][1] != "}":
        if toks[i][0] == "ident" and i + 2 < len(toks) and toks[i + 2][0] == "string":
            into.append(Matcher(metric, toks[i][1], toks[i + 1][1], toks[i + 2][1][1:-1]))
            i += 3
            continue
        i += 1
    return i + 1


def substitute(expr: str, variables: dict[str, str], builtins: dict[str, str]) -> str:
    """``expr`` with Grafana's ``$__*`` built-ins and template variables replaced.

    Raises KeyError for a variable that is neither a built-in nor in ``variables``.
    """

    def repl(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in builtins:
            return builtins[name]
        return variables[name]

    return _VARIABLE.sub(repl, expr)


def label_values(query: str) -> tuple[str | None, str]:
    """The selector and label of a Grafana ``label_values(selector, label)`` query."""
    match = _LABEL_VALUES.match(query)
    if match is None:
        raise ValueError(f"not a label_values() query: {query!r}")
    return match.group("selector"), match.group("label")
