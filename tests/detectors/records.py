"""Hand-built compaction records and detection contexts for the pure detector tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypedDict, Unpack

from otel_compaction.config import Settings
from otel_compaction.detectors import DetectionContext
from otel_compaction.model import CompactionRecord, Cycle, PhaseEstimate, Pressure
from otel_compaction.semconv import CompactionMode, CompactionSource, PhaseSource

PHASES = ("explore", "hypothesize", "patch", "verify")


class RecordFields(TypedDict, total=False):
    """Fields of a :class:`CompactionRecord` a test sets (the others keep ``record``'s)."""

    compaction_id: str
    conversation_id: str
    turn_index: int
    source: CompactionSource
    mode: CompactionMode
    trigger: str | None
    tokens_before: int | None
    tokens_after: int | None
    summary_tokens: int | None
    retained_tail_tokens: int | None
    duplicated_tokens: int | None
    carried_over_tokens: int | None
    parent_id: str | None
    root_id: str
    generation: int
    cycle: Cycle | None
    token_fraction: float | None
    failed: bool
    summary_fingerprint: str | None
    schema_coverage: float | None
    missing_fields: tuple[str, ...]
    timestamp: float | None
    window: int | None
    tokens_after_reported: int | None
    error: str | None
    lineage_assumed: bool
    growth_per_turn: float | None
    summary_template: str | None


def record(turn: int = 30, /, **kw: Unpack[RecordFields]) -> CompactionRecord:
    """A lossy compaction record at ``turn`` with the given fields overridden."""
    base = CompactionRecord(
        compaction_id=f"c{turn}",
        conversation_id="conv",
        turn_index=turn,
        source=CompactionSource.EXPLICIT,
        mode=CompactionMode.LOSSY,
        trigger="auto",
        tokens_before=None,
        tokens_after=None,
        summary_tokens=None,
        retained_tail_tokens=None,
        duplicated_tokens=None,
        carried_over_tokens=None,
        parent_id=None,
        root_id=f"c{turn}",
        generation=0,
        cycle=None,
        token_fraction=None,
        window=200_000,
    )
    return dataclasses.replace(base, **kw)


def phase(distribution: Sequence[float], transition_likelihood: float) -> PhaseEstimate:
    """A phase estimate over PHASES."""
    best = max(range(len(distribution)), key=lambda i: distribution[i])
    return PhaseEstimate(
        name=PHASES[best],
        confidence=distribution[best],
        entropy=0.5,
        transition_likelihood=transition_likelihood,
        source=PhaseSource.REPORTED,
        distribution=tuple(distribution),
    )


STRADDLING = phase((0.05, 0.48, 0.44, 0.03), 0.52)
SETTLED = phase((0.04, 0.04, 0.88, 0.04), 0.24)


def pressure(token_fraction: float, attention_decay: float = 0.0) -> Pressure:
    """A pressure on a 200k window."""
    return Pressure(
        context_tokens=round(token_fraction * 200_000),
        window=200_000,
        token_fraction=token_fraction,
        attention_decay=attention_decay,
    )


def run_of(
    intervals: Sequence[int],
    per_turn: Sequence[float] | float = 600.0,
    tokens_after: Sequence[int | None] | None = None,
    first_turn: int = 10,
) -> tuple[CompactionRecord, ...]:
    """A conversation's compactions spaced by ``intervals`` (first one without a cycle)."""
    loads = [per_turn] * len(intervals) if isinstance(per_turn, float | int) else list(per_turn)
    afters = list(tokens_after) if tokens_after is not None else [None] * (len(intervals) + 1)
    turn = first_turn
    records = [record(turn, tokens_after=afters[0])]
    for i, interval in enumerate(intervals):
        turn += interval
        content = round(loads[i] * interval)
        cycle = Cycle(interval, content, content + 800 * interval, 800 * interval)
        records.append(record(turn, cycle=cycle, tokens_after=afters[i + 1]))
    return tuple(records)


def context_of(
    records: Sequence[CompactionRecord], settings: Settings | None = None, **kw: object
) -> DetectionContext:
    """The detection context of the last record, the others as history."""
    return DetectionContext(
        record=records[-1],
        settings=settings or Settings(),
        history=tuple(records[:-1]),
        **kw,  # type: ignore[arg-type]
    )
