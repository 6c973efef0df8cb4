"""The lineage row of a conversation figure: compactions as a tree of summaries.

Each compaction is a node at its turn, joined to its parent (the compaction
whose summary it compacted again). A chain of summaries of summaries stays on
one lane; a new lineage, or a second child of one parent, opens a new lane.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import plotly.graph_objects as go

from otel_compaction.model import CompactionAnalysis
from otel_compaction.report.parts import FLAG_COLOR, LINE_COLOR, flag_text


def lineage_lanes(compactions: Sequence[CompactionAnalysis]) -> dict[str, int]:
    """A lane per node of the lineage forest: a first child stays on its parent's lane."""
    lanes: dict[str, int] = {}
    has_child: set[str] = set()
    next_lane = 0
    for c in compactions:
        parent = c.record.parent_id
        if parent is not None and parent in lanes and parent not in has_child:
            lanes[c.record.compaction_id] = lanes[parent]
            has_child.add(parent)
        else:
            lanes[c.record.compaction_id] = next_lane
            next_lane += 1
            if parent is not None:
                has_child.add(parent)
    return lanes


def add_lineage(fig: go.Figure, compactions: Sequence[CompactionAnalysis], row: int) -> None:
    """The lineage row: nodes, edges and lanes, in subplot ``row``."""
    if not compactions:
        return
    lanes = lineage_lanes(compactions)
    edge_x, edge_y = _lineage_edges(compactions, lanes)
    fig.add_trace(
        go.Scatter(x=edge_x, y=edge_y, mode="lines", line={"color": "#aaa", "width": 2},
                   hoverinfo="skip", showlegend=False),
        row=row, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[c.record.turn_index for c in compactions],
            y=[lanes[c.record.compaction_id] for c in compactions],
            mode="markers+text",
            marker={
                "size": [16 if c.findings else 12 for c in compactions],
                "color": [FLAG_COLOR if c.findings else LINE_COLOR for c in compactions],
                "symbol": ["star" if c.findings else "circle" for c in compactions],
            },
            text=[f"g{c.record.generation}" for c in compactions],
            textposition="top center",
            name="lineage",
            showlegend=False,
            hovertext=[_lineage_text(c) for c in compactions],
            hoverinfo="text",
        ),
        row=row,
        col=1,
    )
    top = max(lanes.values(), default=0)
    fig.update_yaxes(
        range=[-0.6, top + 0.8], tickmode="array", tickvals=list(range(top + 1)),
        ticktext=[f"lane {i}" for i in range(top + 1)], row=row, col=1,
    )  # fmt: skip


def _lineage_edges(
    compactions: Sequence[CompactionAnalysis], lanes: dict[str, int]
) -> tuple[list[float | None], list[float | None]]:
    """Line coordinates parent -> child, ``None``-separated as plotly draws gaps."""
    where = {c.record.compaction_id: (c.record.turn_index, lanes[c.record.compaction_id])
             for c in compactions}  # fmt: skip
    xs: list[float | None] = []
    ys: list[float | None] = []
    for c in compactions:
        parent = where.get(c.record.parent_id or "")
        if parent is not None:
            child = where[c.record.compaction_id]
            xs += [parent[0], child[0], None]
            ys += [parent[1], child[1], None]
    return xs, ys


def _lineage_text(analysis: CompactionAnalysis) -> str:
    rec = analysis.record
    parent = escape(rec.parent_id) if rec.parent_id else "none (new lineage)"
    return f"{flag_text(analysis)}<br>generation {rec.generation}, parent {parent}"
