"""Rediscovery on real sessions, and whether the boundary flag predicts it.

For every compaction of the given transcripts (Claude Code, Codex), read through the
engine as ``otel-compaction analyze`` reads them: what its rediscovery horizon measured
(repeated calls, their result tokens), whether it was flagged ``boundary_compaction``,
and the conversation's own baseline at its ordinary points
(docs/concepts.md#rediscovery). Prints one row per compaction, then the table of
docs/detection.md#rediscovery-and-the-boundary-flag: compactions flagged boundary, those
not flagged, and the baseline points. Run from the repository root::

    benchmarks/run rediscovery-calibration tests/data/calibration-set/*.jsonl \\
        tests/data/real-sessions/*.jsonl
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import CompactionAnalysis, Rediscovery, RediscoveryBaseline
from otel_compaction.semconv import FindingKind
from otel_compaction.transcripts import (
    CompactionEvent,
    Diagnostics,
    Replayer,
    TurnEvent,
    detect_format,
    read_transcript,
)


@dataclass(frozen=True)
class Row:
    """One compaction: where, what its horizon measured, and whether it was flagged."""

    file: str
    result: Rediscovery
    boundary: bool


@dataclass(frozen=True)
class Group:
    """Rediscovery figures of a group of horizons."""

    name: str
    horizons: int
    with_repeats: int
    median_tokens: float
    mean_tokens: float
    mean_calls: float


def read(path: Path, settings: Settings) -> tuple[list[Row], list[RediscoveryBaseline]]:
    """The compactions of one transcript with their rediscovery, and its baselines."""
    replayer = Replayer(ConversationRegistry(settings))
    flagged: dict[str, bool] = {}
    results: list[Rediscovery] = []
    for event in read_transcript(path, detect_format(path), Diagnostics()):
        step = replayer.feed(event)
        if isinstance(event, TurnEvent) and step.turn is not None:
            results += step.turn.rediscovered
            _note(flagged, step.turn.settled)
        elif isinstance(event, CompactionEvent) and step.compaction is not None:
            _note(flagged, step.compaction)
            _note(flagged, step.compaction.settled)
    registry = replayer.registry
    for settled in registry.finish():
        _note(flagged, settled)
    baselines = []
    for conversation_id in registry.ids():
        analyzer = registry.peek(conversation_id)
        if analyzer is None:
            continue
        results += analyzer.finish_rediscovery()
        if analyzer.rediscovery_baseline is not None:
            baselines.append(analyzer.rediscovery_baseline)
    rows = [Row(path.name, r, flagged.get(r.compaction_id or "", False)) for r in results]
    return rows, baselines


def _note(flagged: dict[str, bool], analysis: CompactionAnalysis | None) -> None:
    if analysis is None:
        return
    cid = analysis.record.compaction_id
    boundary = analysis.flagged(FindingKind.BOUNDARY_COMPACTION)
    flagged[cid] = flagged.get(cid, False) or boundary


def group(name: str, tokens: Sequence[float], calls: Sequence[float]) -> Group:
    """The figures of a group (zeros for an empty one)."""
    if not tokens:
        return Group(name, 0, 0, 0.0, 0.0, 0.0)
    return Group(
        name,
        len(tokens),
        sum(1 for t, c in zip(tokens, calls, strict=True) if c > 0),
        statistics.median(tokens),
        statistics.fmean(tokens),
        statistics.fmean(calls),
    )


def table(rows: Sequence[Row], baselines: Sequence[RediscoveryBaseline]) -> list[Group]:
    """Flagged boundary, not flagged, baseline points (horizons cut below ``min_turns``
    are kept: a compaction's horizon is what it bought)."""
    flagged = [r.result for r in rows if r.boundary]
    other = [r.result for r in rows if not r.boundary]
    base_tokens = [b.mean_tokens or 0.0 for b in baselines if b.points]
    base_calls = [b.mean_calls or 0.0 for b in baselines if b.points]
    return [
        group(
            "compactions flagged boundary", [r.tokens for r in flagged], [r.calls for r in flagged]
        ),
        group("compactions not flagged", [r.tokens for r in other], [r.calls for r in other]),
        group("baseline (per conversation, mean of its points)", base_tokens, base_calls),
    ]


def markdown(groups: Sequence[Group]) -> str:
    """The table of docs/detection.md."""
    lines = [
        "| horizons | n | with a repeat | median tokens | mean tokens | mean calls |",
        "|---|---|---|---|---|---|",
    ]
    for g in groups:
        lines.append(
            f"| {g.name} | {g.horizons} | {g.with_repeats} | {g.median_tokens:,.0f} "
            f"| {g.mean_tokens:,.0f} | {g.mean_calls:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print every compaction's rediscovery, then the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--horizon", type=int, default=Settings().rediscovery_horizon)
    args = parser.parse_args(argv)
    settings = Settings(rediscovery_horizon=args.horizon)
    rows: list[Row] = []
    baselines: list[RediscoveryBaseline] = []
    for path in args.paths:
        more, base = read(path, settings)
        rows += more
        baselines += base
    for row in rows:
        r = row.result
        print(
            f"{row.file[:36]:36} turn {r.start_turn:4}  calls {r.calls:3}  tokens {r.tokens:7,}"
            f"  over {r.horizon_turns:2} calls  {'boundary' if row.boundary else '':8}"
            f"  {', '.join(r.tools)}"
        )
    print()
    print(markdown(table(rows, baselines)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
