"""Shared pieces of the report figures: colours, reference lines, hover texts."""

from __future__ import annotations

from html import escape
from typing import Any

import plotly.graph_objects as go

from otel_compaction.model import CompactionAnalysis
from otel_compaction.report.model import compaction_token_fraction

FLAG_COLOR = "#d62728"
COMPACTION_COLOR = "#7f7f7f"
LINE_COLOR = "#1f77b4"
PHASE_COLORS = ("#8dd3c7", "#fdb462", "#bebada", "#80b1d3", "#b3de69", "#fccde5", "#d9d9d9")


class Guides:
    """Reference lines and their labels, added to the layout in one step.

    Plotly's ``add_vline``/``add_hline`` re-validate the whole layout on every
    call, which made a figure with a few dozen compactions take seconds.
    """

    def __init__(self) -> None:
        self.shapes: list[dict[str, Any]] = []
        self.labels: list[dict[str, Any]] = []

    def vline(self, x: float, row: int, line: dict[str, Any]) -> None:
        """A vertical line over the full height of subplot ``row``."""
        axis = "" if row == 1 else str(row)
        self.shapes.append(
            {"type": "line", "xref": f"x{axis}", "yref": f"y{axis} domain",
             "x0": x, "x1": x, "y0": 0, "y1": 1, "line": line, "layer": "below"}
        )  # fmt: skip

    def hline(self, y: float, row: int, line: dict[str, Any], label: str) -> None:
        """A horizontal line across subplot ``row``, labelled at its left end."""
        axis = "" if row == 1 else str(row)
        self.shapes.append(
            {"type": "line", "xref": f"x{axis} domain", "yref": f"y{axis}",
             "x0": 0, "x1": 1, "y0": y, "y1": y, "line": line}
        )  # fmt: skip
        self.labels.append(
            {"xref": f"x{axis} domain", "yref": f"y{axis}", "x": 0, "y": y, "text": label,
             "showarrow": False, "xanchor": "left", "yanchor": "bottom",
             "font": {"size": 11, "color": "#555"}}
        )  # fmt: skip

    def apply(self, fig: go.Figure) -> None:
        """Put every line and label on the figure."""
        fig.update_layout(shapes=self.shapes, annotations=[*fig.layout.annotations, *self.labels])


def short_id(compaction_id: str) -> str:
    """The first 8 characters of a long id (as git shortens hashes); short ids as they are."""
    return compaction_id if len(compaction_id) <= 12 else compaction_id[:8]


def flag_text(analysis: CompactionAnalysis) -> str:
    """Hover text of a compaction: its full id, turn, token fraction and findings."""
    rec = analysis.record
    fraction = compaction_token_fraction(analysis)
    at = "" if fraction is None else f", token fraction {fraction:.2f}"
    head = f"compaction {escape(rec.compaction_id)} at turn {rec.turn_index}{at}"
    if not analysis.findings:
        return head
    reasons = "<br>".join(
        f"<b>{f.kind.value}</b> ({escape(f.rule)}): {escape(wrap(f.reason))}"
        for f in analysis.findings
    )
    return f"{head}<br>{reasons}"


def wrap(text: str, width: int = 90) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(lines)
