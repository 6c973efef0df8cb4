"""The HTML report explains itself: short ids, markers at the compaction's turn, one token
fraction per compaction, no empty panel, counts in the right number."""

from __future__ import annotations

import re

from otel_compaction.config import Settings
from otel_compaction.report.figures import conversation_figure, figure_rows
from otel_compaction.report.html import render_html
from otel_compaction.report.model import compaction_token_fraction
from tests.report.one_compaction import COMPACTION_ID, one_compaction_report


def test_one_compaction_is_flagged_at_turn_30() -> None:
    """The fixture is what it says: one compaction, at turn 30, flagged boundary_compaction."""
    (finding,) = one_compaction_report().findings
    assert (finding.kind.value, finding.turn) == ("boundary_compaction", 30)


def test_no_empty_panel_for_one_compaction() -> None:
    """One compaction has no interval and nothing to relate: timeline and phase rows only."""
    (conversation,) = one_compaction_report().conversations
    assert figure_rows(conversation) == ["timeline", "phase"]
    figure = conversation_figure(conversation, Settings())
    texts = [a.text for a in figure.layout.annotations]
    assert "phase and transition likelihood" in texts
    assert not [t for t in texts if t.startswith(("compaction interval", "compaction lineage"))]
    assert not [t for t in figure.data if t.name == "interval"]


def test_flagged_marker_sits_at_the_compactions_turn_and_fraction() -> None:
    """The star is at x = 30 (not 29.5), at the token fraction the finding quotes."""
    report = one_compaction_report()
    (conversation,) = report.conversations
    (compaction,) = conversation.compactions
    figure = conversation_figure(conversation, Settings())
    (star,) = [t for t in figure.data if t.name == "flagged compaction"]
    fraction = compaction_token_fraction(compaction)
    assert fraction is not None
    assert list(star.x) == [30]
    assert list(star.y) == [fraction]
    assert f"token fraction {fraction:.2f}" in compaction.findings[0].reason
    lines = [s for s in figure.layout.shapes if s.type == "line" and s.x0 == s.x1]
    assert {s.x0 for s in lines} == {30}


def test_one_token_fraction_per_compaction_in_table_hover_and_reason() -> None:
    """Findings table, hover and reason show the same figure; the peak is not below it."""
    report = one_compaction_report()
    (conversation,) = report.conversations
    (compaction,) = conversation.compactions
    shown = f"{compaction_token_fraction(compaction):.2f}"
    page = render_html(report, settings=Settings())
    findings_table = page[page.index("<h2>Findings</h2>") : page.index("id='legend'")]
    assert f"<td class='num'>{shown}</td>" in findings_table
    assert f"at token fraction {shown}" in findings_table
    assert f"token fraction {shown}" in page[page.index("conversation-chart-0") :]
    peak = conversation.peak_token_fraction
    assert peak is not None
    assert peak >= (compaction_token_fraction(compaction) or 0.0)


def test_compaction_ids_are_short_with_the_full_id_on_hover() -> None:
    """Tables show 8 characters of the id; the title attribute holds all of it."""
    page = render_html(one_compaction_report(), settings=Settings())
    assert f"<code title='{COMPACTION_ID}'>{COMPACTION_ID[:8]}</code>" in page
    assert f">{COMPACTION_ID}<" not in page


def test_counts_are_in_the_right_number() -> None:
    """1 conversation, 1 compaction, 1 finding: no "1 compactions"."""
    page = render_html(one_compaction_report(), settings=Settings())
    assert "1 conversation, 1 compaction, " in page
    assert "1 finding<" in page
    assert not re.search(r"\b1 (conversations|compactions|findings|turns)\b", page)
