"""Rediscovery on the generated agents: the flag-vs-rediscovery table of docs/detection.md.

Each run's ``rediscovery`` rows (``truth_harness.rediscovery_rows``) hold, per compaction
with a ``compaction.rediscovery`` span: whether it was flagged ``boundary_compaction``,
the calls and tokens its horizon measured, and the calls and tokens the agent was
scripted to redo (``truth_agent``: dropped reads fetched again). The table splits the
measured figures as ``benchmarks/calibration/rediscovery.py`` splits the real sessions';
the line under it says how often the measure equals the script.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.calibration.rediscovery import Group, group, markdown


def rediscovery_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The table and the agreement line (empty when no run measured rediscovery)."""
    rows = [row for run in runs for row in run.get("rediscovery", ())]
    if not rows:
        return []
    flagged = [r for r in rows if r[0]]
    other = [r for r in rows if not r[0]]
    bases = [b for run in runs for b in run.get("baselines", ())]
    groups = [
        group("compactions flagged boundary", [r[2] for r in flagged], [r[1] for r in flagged]),
        group("compactions not flagged", [r[2] for r in other], [r[1] for r in other]),
    ]
    table = markdown(groups)
    if bases:
        base = Group("baseline (per conversation, mean of its points)", len(bases), 0,
                     statistics.median(bases), statistics.fmean(bases), 0.0)  # fmt: skip
        table += (
            f"\n| {base.name} | {base.horizons} | — | {base.median_tokens:,.0f} "
            f"| {base.mean_tokens:,.0f} | — |"
        )
    scripted = [r for r in rows if r[3] is not None]
    calls = sum(1 for r in scripted if r[1] == r[3])
    tokens = sum(1 for r in scripted if r[2] == r[4])
    redone = sum(1 for r in scripted if r[3])
    return [
        "Rediscovery after the generated agents' compactions (dropped reads fetched again, "
        "benchmarks/truth/agent.py), by boundary flag:",
        "",
        table,
        "",
        f"Against the script: of {len(scripted)} compactions matched to their truth "
        f"({redone} with a scripted repeat), the measured calls equal the scripted ones in "
        f"{calls}, the tokens in {tokens}.",
    ]
