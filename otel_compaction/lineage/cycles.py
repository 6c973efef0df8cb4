"""Cycle accounting between two compactions of one conversation.

Why: docs/concepts.md#re-expansion-livelock.

A cycle runs from one compaction to the next. With ``p`` and ``t`` the turn
indices of the previous and of this compaction (the turn of the first call that
sees each compacted context):

- ``interval_turns = t - p`` (clamped at 0 when a source reports turns out of order);
- ``new_content_tokens``: the new task content (tool results, user text) of the
  turns observed between the two compactions, i.e. turns ``p .. t-1``;
- ``net_growth_tokens = end - start``, ``end`` = the context just before this
  compaction (its ``tokens_before``, else the last turn's context) and ``start``
  = the context just after the previous one (its ``tokens_after``, else the
  context of the first turn after it); an unknown end or start counts as no growth;
- ``residual_tokens = net_growth - new_content``: what the context grew by beyond
  the task's own new content (summary framing, duplication, re-derived
  constraints, and the assistant's own messages).
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_compaction.model import CompactionRecord, Cycle


@dataclass(slots=True)
class CycleAccumulator:
    """Running sums of the turns since the last compaction (constant memory)."""

    turns: int = 0
    new_content_tokens: int = 0
    first_context_tokens: int | None = None
    last_context_tokens: int | None = None

    def observe_turn(self, context_tokens: int, new_content_tokens: int) -> None:
        """Add one turn seen after the last compaction."""
        self.turns += 1
        self.new_content_tokens += max(0, new_content_tokens)
        if self.first_context_tokens is None:
            self.first_context_tokens = context_tokens
        self.last_context_tokens = context_tokens

    def close(
        self, previous: CompactionRecord | None, turn_index: int, tokens_before: int | None
    ) -> Cycle | None:
        """The cycle that ends at a compaction on ``turn_index``; None for the first one."""
        if previous is None:
            return None
        end = tokens_before if tokens_before is not None else self.last_context_tokens
        start = previous.tokens_after
        if start is None:
            start = self.first_context_tokens
        growth = end - start if end is not None and start is not None else 0
        return Cycle(
            interval_turns=max(0, turn_index - previous.turn_index),
            new_content_tokens=self.new_content_tokens,
            net_growth_tokens=growth,
            residual_tokens=growth - self.new_content_tokens,
        )

    def growth_per_turn(self, tokens_before: int | None) -> float | None:
        """The context's growth per turn since the cycle began, up to ``tokens_before``
        (the last turn's context when None); None before two known sizes."""
        end = tokens_before if tokens_before is not None else self.last_context_tokens
        start = self.first_context_tokens
        if end is None or start is None or self.turns <= 0:
            return None
        # The first turn's context is the cycle's start: growth over the turns since.
        span = self.turns if tokens_before is not None else self.turns - 1
        return (end - start) / span if span > 0 else None

    def reset(self) -> None:
        """Start a new cycle (called right after a compaction)."""
        self.turns = 0
        self.new_content_tokens = 0
        self.first_context_tokens = None
        self.last_context_tokens = None
