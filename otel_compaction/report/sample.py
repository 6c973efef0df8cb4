"""What a report keeps of a conversation's turns: counts exactly, the turns themselves sampled.

``analyze`` reads transcripts of any length; keeping every turn's analysis made
its memory grow with the transcript (about 1 KiB a turn). A :class:`TurnSample`
keeps the figures the report prints exactly (the number of turns, the peak token
fraction) and at most :data:`MAX_SAMPLED` turns for the charts: every turn while
there are few, then every second, fourth... turn (the stride doubles each time
the sample fills), plus the turns on either side of each compaction, which the
charts mark.
"""

from __future__ import annotations

from otel_compaction.model import TurnAnalysis

MAX_SAMPLED = 1024
"""Turns kept per conversation at most (beside those next to a compaction)."""


class TurnSample:
    """A bounded, evenly spaced sample of one conversation's turns, with exact totals."""

    __slots__ = ("_kept", "_last", "_pin_next", "_pinned", "_stride", "count", "last_index", "peak")

    def __init__(self) -> None:
        self._kept: list[tuple[int, TurnAnalysis]] = []
        self._pinned: dict[int, TurnAnalysis] = {}
        self._stride = 1
        self._last: tuple[int, TurnAnalysis] | None = None
        self._pin_next = False
        self.count = 0
        self.last_index = 0
        self.peak: float | None = None

    def add(self, turn: TurnAnalysis) -> None:
        """Count one turn, and keep it when it falls on the stride."""
        position = self.count
        self.count += 1
        self.last_index = max(self.last_index, turn.turn_index)
        fraction = turn.pressure.token_fraction
        self.peak = fraction if self.peak is None else max(self.peak, fraction)
        self._last = (position, turn)
        if self._pin_next:
            self._pinned[position] = turn
            self._pin_next = False
        if position % self._stride == 0:
            self._kept.append((position, turn))
            if len(self._kept) > MAX_SAMPLED:
                self._stride *= 2
                self._kept = [(p, t) for p, t in self._kept if p % self._stride == 0]

    def mark_compaction(self) -> None:
        """Keep the turn before a compaction and the first one after it."""
        if self._last is not None:
            position, turn = self._last
            self._pinned[position] = turn
        self._pin_next = True

    def turns(self) -> tuple[TurnAnalysis, ...]:
        """The kept turns, in order."""
        merged = dict(self._kept)
        merged.update(self._pinned)
        return tuple(merged[p] for p in sorted(merged))
