"""The phase signal on real sessions: how often the veto holds, and why each boundary flag.

For every conversation of the given transcripts (Claude Code, Codex), with the
default settings or ``--set name=value`` overrides:

- turns, turns whose phase is known, turns on which the veto holds
  (transition likelihood above tau) and their share;
- compactions, and each ``boundary_compaction`` finding with the tool calls of the
  turns before and after it (the evidence that makes it a boundary).

``--sweep`` reruns the veto share over a grid of the hold settings, the
calibration behind their defaults (``docs/signals.md``). Run from the repository root::

    benchmarks/run phase-calibration tests/data/calibration-set/*.jsonl \\
        tests/data/real-sessions/*.jsonl [--sweep]
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.report.build import analyze_files
from otel_compaction.report.model import ConversationReport
from otel_compaction.semconv import FindingKind

AROUND = 4
"""Turns of tool calls shown on each side of a flagged compaction."""


@dataclass(frozen=True)
class Row:
    """One conversation's figures."""

    name: str
    turns: int
    known: int
    veto: int
    compactions: int
    boundaries: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.veto / self.turns if self.turns else 0.0


def rows(paths: Sequence[Path], settings: Settings) -> list[Row]:
    """The figures of every conversation in ``paths``, one file at a time."""
    out = []
    for path in paths:
        for conversation in analyze_files([path], settings).conversations:
            out.append(_row(path.name, conversation, settings))
    return out


def _row(name: str, c: ConversationReport, s: Settings) -> Row:
    known = [t for t in c.turns if t.phase.known]
    veto = [t for t in known if t.phase.transition_likelihood > s.transition_veto]
    boundaries = tuple(
        f"turn {f.turn}: {_tools_around(c, f.turn)}; {f.reason}"
        for a in c.compactions
        for f in a.findings
        if f.kind is FindingKind.BOUNDARY_COMPACTION
    )
    return Row(name, len(c.turns), len(known), len(veto), len(c.compactions), boundaries)


def _tools_around(c: ConversationReport, turn: int) -> str:
    """The tool categories of the turns before and after ``turn``."""

    def calls(index: int) -> str:
        t = c.turns[index - 1]
        return "+".join(t.tool_categories) or "none"

    before = [calls(i) for i in range(max(1, turn - AROUND), turn) if i <= len(c.turns)]
    after = [calls(i) for i in range(turn, min(len(c.turns), turn + AROUND - 1) + 1)]
    return f"before [{', '.join(before)}] | from it [{', '.join(after)}]"


def table(found: Sequence[Row]) -> str:
    """The Markdown table of ``found``, with the total."""
    lines = [
        "| session | turns | phase known | veto holds | compactions | boundary flags |",
        "|---|---|---|---|---|---|",
    ]
    for r in found:
        lines.append(
            f"| `{r.name}` | {r.turns} | {r.known} | {r.veto} ({r.share:.0%}) | "
            f"{r.compactions} | {len(r.boundaries)} |"
        )
    turns = sum(r.turns for r in found)
    veto = sum(r.veto for r in found)
    lines.append(
        f"| all | {turns} | {sum(r.known for r in found)} | {veto} "
        f"({veto / max(turns, 1):.1%}) | {sum(r.compactions for r in found)} | "
        f"{sum(len(r.boundaries) for r in found)} |"
    )
    return "\n".join(lines)


def sweep(paths: Sequence[Path]) -> str:
    """The veto share and boundary flags over a grid of the hold settings."""
    lines = [
        "| hold confidence (inferred) | hold turns | veto holds | boundary flags |",
        "|---|---|---|---|",
    ]
    for confidence, turns in itertools.product((0.8, 0.85, 0.9, 0.95), (2, 3, 6)):
        s = Settings.model_validate(
            {"phase_hold_confidence": confidence, "phase_hold_turns": turns}
        )
        found = rows(paths, s)
        total = sum(r.turns for r in found)
        veto = sum(r.veto for r in found)
        flags = sum(len(r.boundaries) for r in found)
        lines.append(f"| {confidence} | {turns} | {veto / max(total, 1):.1%} | {flags} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the calibration table (and the sweep) for the given transcripts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--sweep", action="store_true", help="also sweep the hold settings")
    args = parser.parse_args(argv)
    paths = sorted(args.paths)
    found = rows(paths, Settings.model_validate({}))
    print(table(found))
    for r in found:
        for line in r.boundaries:
            print(f"\n- `{r.name}` {line}")
    if args.sweep:
        print()
        print(sweep(paths))


if __name__ == "__main__":
    main()
