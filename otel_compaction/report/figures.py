"""One plotly figure per conversation: timeline, phase band, compaction intervals, lineage.

Rows, top to bottom (the last two only when they have something to show):

1. **token fraction** per turn, the pressure threshold and hard ceiling as
   dashed lines, each compaction as a vertical line and a marker at its turn
   and its token fraction (the one its findings quote; flagged compactions
   red, larger, with the reasons on hover);
2. **phase band**: the most likely phase as coloured runs of turns, with the
   transition likelihood drawn over it and the veto threshold tau;
3. **compaction intervals**: turns between consecutive compactions, one bar
   per compaction with an interval (bars shrinking to the right under flat
   load is the livelock signature; flagged bars are red);
4. **lineage**, for two compactions or more: each compaction a node at its
   turn, an edge to its parent; a chain of summaries of summaries stays on one
   lane, a new lineage or a branch opens a new lane.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from otel_compaction.config import Settings
from otel_compaction.model import CompactionAnalysis, TurnAnalysis
from otel_compaction.report.lineage_chart import add_lineage
from otel_compaction.report.model import ConversationReport, compaction_token_fraction
from otel_compaction.report.parts import (
    COMPACTION_COLOR,
    FLAG_COLOR,
    LINE_COLOR,
    PHASE_COLORS,
    Guides,
    flag_text,
)

MAX_POINTS = 5000
"""Turns drawn on the timeline; longer conversations are thinned (compaction turns kept)."""


@dataclass(frozen=True, slots=True)
class _PhaseRun:
    phase: str
    first: int
    last: int


_ROWS = {
    "timeline": (0.34, "token fraction (context / window) per turn"),
    "phase": (0.16, "phase and transition likelihood"),
    "intervals": (0.25, "compaction interval (turns since the previous compaction)"),
    "lineage": (0.25, "compaction lineage (edge: summary compacted again)"),
}


def figure_rows(conv: ConversationReport) -> list[str]:
    """The rows a conversation's figure has: no panel that would be empty.

    The interval row needs an interval (two compactions, or a cycle the input
    gives); the lineage row needs two compactions to relate (a lone compaction's
    generation is on its hover in the timeline).
    """
    rows = ["timeline", "phase"]
    if any(c.record.cycle is not None for c in conv.compactions):
        rows.append("intervals")
    if len(conv.compactions) >= 2:
        rows.append("lineage")
    return rows


def conversation_figure(conv: ConversationReport, settings: Settings) -> go.Figure:
    """The figure of one conversation: timeline, phase band, and the compaction rows it needs."""
    rows = figure_rows(conv)
    row = {name: i for i, name in enumerate(rows, start=1)}
    heights = [_ROWS[name][0] for name in rows]
    fig = make_subplots(
        rows=len(rows),
        cols=1,
        row_heights=[h / sum(heights) for h in heights],
        vertical_spacing=0.07 if len(rows) > 2 else 0.12,
        subplot_titles=[_ROWS[name][1] for name in rows],
    )
    guides = Guides()
    _timeline(fig, conv, settings, guides)
    _phase_band(fig, conv.turns, settings, guides)
    if "intervals" in row:
        _intervals(fig, conv.compactions, row["intervals"])
    if "lineage" in row:
        add_lineage(fig, conv.compactions, row["lineage"])
    guides.apply(fig)
    last_turn = max(conv.turn_count, *(c.record.turn_index for c in conv.compactions), 1)
    for name in ("timeline", "phase", "lineage"):
        if name in row:
            fig.update_xaxes(range=[0.5, last_turn + 0.5], row=row[name], col=1)
    fig.update_xaxes(title_text="turn", row=len(rows), col=1)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(range=[0, 1.0], row=2, col=1)
    if "intervals" in row:
        fig.update_yaxes(title_text="turns", row=row["intervals"], col=1)
    height = int(1000 * sum(heights))
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 30, "t": 60, "b": 60},
        legend={"orientation": "h", "y": -55 / height},  # below the "turn" axis title
        hovermode="closest",
    )
    return fig


def _thin(turns: Sequence[TurnAnalysis], keep: set[int]) -> list[TurnAnalysis]:
    if len(turns) <= MAX_POINTS:
        return list(turns)
    stride = -(-len(turns) // MAX_POINTS)
    return [t for i, t in enumerate(turns) if i % stride == 0 or t.turn_index in keep]


def _timeline(fig: go.Figure, conv: ConversationReport, settings: Settings, guides: Guides) -> None:
    compaction_turns = {c.record.turn_index for c in conv.compactions}
    keep = compaction_turns | {t - 1 for t in compaction_turns}
    turns = _thin(conv.turns, keep)
    fig.add_trace(
        go.Scatter(
            x=[t.turn_index for t in turns],
            y=[t.pressure.token_fraction for t in turns],
            mode="lines+markers" if len(turns) <= 400 else "lines",
            line={"color": LINE_COLOR, "width": 2},
            marker={"size": 4},
            name="token fraction",
            customdata=[[t.pressure.context_tokens, t.pressure.window] for t in turns],
            hovertemplate="turn %{x}<br>fraction %{y:.3f}<br>"
            "%{customdata[0]:,} of %{customdata[1]:,} tokens<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for value, label in (
        (settings.pressure_threshold, "pressure threshold"),
        (settings.hard_ceiling, "hard ceiling"),
    ):
        guides.hline(
            value, 1, {"dash": "dash", "color": "#999", "width": 1}, f"{label} {value:.2f}"
        )
    _compaction_marks(fig, conv.compactions, guides)


def _compaction_marks(
    fig: go.Figure, compactions: Sequence[CompactionAnalysis], guides: Guides
) -> None:
    for flagged in (False, True):
        chosen = [c for c in compactions if bool(c.findings) is flagged]
        if not chosen:
            continue
        color = FLAG_COLOR if flagged else COMPACTION_COLOR
        line = {"color": color, "width": 3 if flagged else 1, "dash": "solid" if flagged else "dot"}
        for c in chosen:
            for row in (1, 2):
                guides.vline(c.record.turn_index, row, line)
        fig.add_trace(
            go.Scatter(
                x=[c.record.turn_index for c in chosen],
                y=[compaction_token_fraction(c) or 0.0 for c in chosen],
                mode="markers",
                marker={
                    "symbol": "star" if flagged else "diamond",
                    "size": 16 if flagged else 9,
                    "color": color,
                    "line": {"width": 1, "color": "#333"},
                },
                name="flagged compaction" if flagged else "compaction",
                text=[flag_text(c) for c in chosen],
                hovertemplate="%{text}<extra></extra>",
            ),
            row=1,
            col=1,
        )


def phase_runs(turns: Sequence[TurnAnalysis]) -> list[_PhaseRun]:
    """Consecutive turns with the same most likely phase, as runs."""
    runs: list[_PhaseRun] = []
    for t in turns:
        if runs and runs[-1].phase == t.phase.name and runs[-1].last == t.turn_index - 1:
            runs[-1] = _PhaseRun(t.phase.name, runs[-1].first, t.turn_index)
        else:
            runs.append(_PhaseRun(t.phase.name, t.turn_index, t.turn_index))
    return runs


def _phase_band(
    fig: go.Figure, turns: Sequence[TurnAnalysis], settings: Settings, guides: Guides
) -> None:
    runs = phase_runs(turns)
    names = list(dict.fromkeys([*settings.phases, *(r.phase for r in runs)]))
    for i, name in enumerate(names):
        mine = [r for r in runs if r.phase == name]
        if not mine:
            continue
        fig.add_trace(
            go.Bar(
                x=[(r.first + r.last) / 2 for r in mine],
                y=[1.0] * len(mine),
                width=[r.last - r.first + 1 for r in mine],
                marker={"color": PHASE_COLORS[i % len(PHASE_COLORS)], "line": {"width": 0}},
                opacity=0.55,
                name=f"phase: {name}",
                customdata=[[r.first, r.last] for r in mine],
                hovertemplate=f"{escape(name)}<br>turns %{{customdata[0]}}-%{{customdata[1]}}"
                "<extra></extra>",
            ),
            row=2,
            col=1,
        )
    thinned = _thin(turns, set())
    fig.add_trace(
        go.Scatter(
            x=[t.turn_index for t in thinned],
            y=[t.phase.transition_likelihood for t in thinned],
            mode="lines",
            line={"color": "#222", "width": 2},
            name="transition likelihood",
            customdata=[[t.phase.name, t.phase.confidence] for t in thinned],
            hovertemplate="turn %{x}<br>transition likelihood %{y:.2f}<br>"
            "%{customdata[0]} (%{customdata[1]:.2f})<extra></extra>",
        ),
        row=2,
        col=1,
    )
    tau = settings.transition_veto
    guides.hline(tau, 2, {"dash": "dash", "color": FLAG_COLOR, "width": 1}, f"veto tau {tau:.2f}")
    fig.update_layout(barmode="overlay")


def _intervals(fig: go.Figure, compactions: Sequence[CompactionAnalysis], row: int) -> None:
    cycles = [(i, c) for i, c in enumerate(compactions, start=1) if c.record.cycle is not None]
    if not cycles:
        return
    data: list[list[Any]] = []
    for _, c in cycles:
        cycle = c.record.cycle
        assert cycle is not None  # filtered above
        data.append([c.record.turn_index, round(cycle.new_content_per_turn), cycle.residual_tokens])
    fig.add_trace(
        go.Bar(
            x=[f"#{i}" for i, _ in cycles],
            y=[c.record.cycle.interval_turns for _, c in cycles if c.record.cycle is not None],
            marker={"color": [FLAG_COLOR if c.findings else LINE_COLOR for _, c in cycles]},
            text=[c.record.cycle.interval_turns for _, c in cycles if c.record.cycle is not None],
            textposition="outside",
            name="interval",
            showlegend=False,
            customdata=data,
            hovertemplate="compaction %{x} at turn %{customdata[0]}<br>interval %{y} turns<br>"
            "new content %{customdata[1]:,} tokens/turn<br>"
            "residual %{customdata[2]:,} tokens<extra></extra>",
        ),
        row=row,
        col=1,
    )
