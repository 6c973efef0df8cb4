"""The self-contained HTML report: plotly.js inline, no request at view time.

The page: a summary, every finding in a table, a legend of the finding kinds
and rules (linked to the docs when they are at hand), every conversation in a
table, then one figure per conversation (:mod:`otel_compaction.report.figures`)
for at most ``max_charts`` conversations, those with findings first. Compaction
ids are shortened to 8 characters, the full id on hover.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from pathlib import Path

from plotly.offline import get_plotlyjs

from otel_compaction.config import Settings
from otel_compaction.report.figures import conversation_figure
from otel_compaction.report.legend import CONCEPTS_PAGE, DETECTORS_PAGE, LEGEND, docs_dir
from otel_compaction.report.model import (
    ConversationReport,
    FindingsReport,
    compaction_token_fraction,
)
from otel_compaction.report.parts import short_id
from otel_compaction.report.text import counted

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 36px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; }
.flag { color: #d62728; font-weight: 600; } .muted { color: #777; }
code { font-size: 12px; }
"""


def render_html(
    report: FindingsReport, *, max_charts: int = 50, settings: Settings | None = None
) -> str:
    """The whole report as one HTML document."""
    settings = settings or Settings.from_env()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>otel-compaction report</title>",
        f"<style>{_STYLE}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        *_summary(report),
        *_findings_table(report),
        *_legend(report, docs_dir()),
        *_conversations_table(report),
        *_charts(report, max_charts, settings),
        *_ledger_table(report),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def chart_order(report: FindingsReport, max_charts: int) -> list[ConversationReport]:
    """The conversations that get a figure: with findings first, then most compactions."""
    ranked = sorted(
        (c for c in report.conversations if c.turn_count or c.compactions),
        key=lambda c: (not c.findings, -len(c.compactions), -c.turn_count),
    )
    return ranked[: max(max_charts, 0)]


def _summary(report: FindingsReport) -> Iterator[str]:
    compactions = sum(len(c.compactions) for c in report.conversations)
    yield "<h1>otel-compaction report</h1>"
    yield (
        f"<p>{counted(len(report.conversations), 'conversation')}, "
        f"{counted(compactions, 'compaction')}, "
        f'<span class="flag">{counted(len(report.findings), "finding")}</span>; '
        f"{counted(len(report.files), 'input file')}, "
        f"{counted(report.skipped_count, 'line')} skipped.</p>"
    )
    summary = report.skip_summary
    if not summary.nothing:  # what was skipped and why, in counts
        yield f"<p class='flag'>{escape(summary.headline())}</p><ul>"
        yield "".join(f"<li><code>{escape(line)}</code></li>" for line in summary.details())
        yield "</ul>"
    if report.continuations:
        yield "<p>Files that continue others (their repeated records read once):</p><ul>"
        yield "".join(f"<li><code>{escape(str(c))}</code></li>" for c in report.continuations)
        yield "</ul>"


def _findings_table(report: FindingsReport) -> Iterator[str]:
    yield "<h2>Findings</h2>"
    if not report.findings:
        yield "<p class='muted'>None: no compaction was flagged.</p>"
        return
    yield "<table><tr><th>kind</th><th>rule</th><th>conversation</th><th>turn</th>"
    yield "<th>compaction</th><th>token fraction</th><th>reason</th></tr>"
    for conv in report.conversations:
        for c in conv.compactions:
            fraction = compaction_token_fraction(c)
            shown = "" if fraction is None else f"{fraction:.2f}"
            for f in c.findings:
                yield (
                    f"<tr><td class='flag'>{_kind_link(f.kind.value, f.rule)}</td>"
                    f"<td>{escape(f.rule)}</td>"
                    f"<td><a href='#{_anchor(f.conversation_id)}'>{escape(f.conversation_id)}"
                    f"</a></td><td class='num'>{f.turn}</td><td>{_id(f.compaction_id)}</td>"
                    f"<td class='num'>{shown}</td><td>{escape(f.reason)}</td></tr>"
                )
    yield "</table>"


def _id(compaction_id: str) -> str:
    """A compaction id, short, with the full id on hover."""
    return f"<code title='{escape(compaction_id)}'>{escape(short_id(compaction_id))}</code>"


def _kind_link(kind: str, rule: str) -> str:
    return f"<a href='#legend-{escape(kind)}-{escape(rule)}'>{escape(kind)}</a>"


def _legend(report: FindingsReport, docs: Path | None) -> Iterator[str]:
    """What each finding kind and rule means; the ones found here first, marked."""
    found = {(f.kind, f.rule) for f in report.findings}
    yield "<h2 id='legend'>What the findings mean</h2>"
    if docs is None:
        yield (
            f"<p class='muted'>The reasons are in <code>{CONCEPTS_PAGE}</code>, the exact "
            f"rules in <code>{DETECTORS_PAGE}</code>, in the otel-compaction repository.</p>"
        )
    yield "<table><tr><th>kind</th><th>rule</th><th>means</th><th>why</th><th>here</th></tr>"
    entries = sorted(LEGEND, key=lambda e: (e.kind, e.rule) not in found)
    for e in entries:
        section = escape(e.section)
        if docs is not None:
            href = f"{(docs / 'concepts.md').as_uri()}#{e.anchor}"
            section = f"<a href='{escape(href)}'>{section}</a>"
        here = "found" if (e.kind, e.rule) in found else ""
        yield (
            f"<tr id='legend-{e.kind.value}-{escape(e.rule)}'><td>{e.kind.value}</td>"
            f"<td>{escape(e.rule)}</td><td>{escape(e.meaning)}</td><td>{section}</td>"
            f"<td class='flag'>{here}</td></tr>"
        )
    yield "</table>"


def _conversations_table(report: FindingsReport) -> Iterator[str]:
    yield "<h2>Conversations</h2>"
    yield "<table><tr><th>conversation</th><th>agent</th><th>turns</th><th>compactions</th>"
    yield "<th>max generation</th><th>peak token fraction</th><th>findings</th></tr>"
    for c in report.conversations:
        peak = c.peak_token_fraction
        yield (
            f"<tr><td><a href='#{_anchor(c.conversation_id)}'>{escape(c.conversation_id)}</a></td>"
            f"<td>{escape(c.agent or '')}</td><td class='num'>{c.turn_count}</td>"
            f"<td class='num'>{len(c.compactions)}</td><td class='num'>{c.max_generation}</td>"
            f"<td class='num'>{'' if peak is None else f'{peak:.2f}'}</td>"
            f"<td class='num{' flag' if c.findings else ''}'>{len(c.findings)}</td></tr>"
        )
    yield "</table>"


def _ledger_table(report: FindingsReport) -> Iterator[str]:
    """What each conversation's compactions bought and cost (``report.ledger``): shown when
    some compaction's rediscovery was measured."""
    ledgers = [c.ledger for c in report.conversations if c.compactions]
    ledgers = [led for led in ledgers if any(r.redone is not None for r in led.rows)]
    if not ledgers:
        return
    yield "<h2>Compaction ledger</h2>"
    yield (
        "<p>Tokens each conversation's compactions reclaimed, spent on their summarizers, and "
        "redid afterwards (tool results fetched again in the 20 calls after a compaction: "
        "rediscovery); net is reclaimed minus the other two.</p>"
    )
    yield "<table><tr><th>conversation</th><th>reclaimed</th><th>summarizer</th>"
    yield "<th>redone</th><th>net</th><th>most redone</th></tr>"
    for led in ledgers:
        tools = sorted({t for r in led.rows if r.redone for t in r.redone.tools})
        yield (
            f"<tr><td>{escape(led.conversation_id)}</td><td class='num'>{led.reclaimed:,}</td>"
            f"<td class='num'>{led.summarizer:,}</td><td class='num'>{led.redone:,}</td>"
            f"<td class='num'>{led.net:,}</td><td>{escape(', '.join(tools))}</td></tr>"
        )
    yield "</table>"


def _charts(report: FindingsReport, max_charts: int, settings: Settings) -> Iterator[str]:
    chosen = chart_order(report, max_charts)
    left_out = sum(1 for c in report.conversations if c.turn_count or c.compactions) - len(chosen)
    for index, conv in enumerate(chosen):
        yield f"<h2 id='{_anchor(conv.conversation_id)}'>{escape(conv.conversation_id)}</h2>"
        origin = ", ".join(escape(x) for x in (conv.agent, conv.source) if x)
        yield (
            f"<p class='muted'>{origin}{'; ' if origin else ''}"
            f"{counted(conv.turn_count, 'turn')}, {counted(len(conv.compactions), 'compaction')}, "
            f"max lineage generation {conv.max_generation}, "
            f"{counted(len(conv.findings), 'finding')}</p>"
        )
        figure = conversation_figure(conv, settings)
        yield figure.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"conversation-chart-{index}",
            config={"displaylogo": False, "responsive": True},
        )
    if left_out > 0:
        yield (
            f"<p class='muted'>{counted(left_out, 'more conversation')} without a chart "
            f"(limit {max_charts}; raise it with --max-charts).</p>"
        )


def _anchor(conversation_id: str) -> str:
    return "c-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conversation_id)
