"""An idle conversation stays small: the registry is meant to hold 100,000 of them."""

from __future__ import annotations

import gc
import tracemalloc

from otel_compaction.analyzer import ConversationRegistry
from otel_compaction.config import Settings
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import CompactionSource

CONVERSATIONS = 1_000


def _fill(registry: ConversationRegistry) -> None:
    """8 turns with tool output and 2 compactions per conversation, as the benchmark does."""
    for n in range(CONVERSATIONS):
        analyzer = registry.get(f"conv-{n}")
        for turn in range(1, 9):
            if turn % 4 == 0:
                analyzer.observe_compaction(
                    CompactionObservation(
                        source=CompactionSource.EXPLICIT,
                        tokens_before=20_000 + 1_000 * turn,
                        tokens_after=40_000 + n,
                        compaction_id=f"c{n}-{turn}",
                    )
                )
            analyzer.observe_turn(
                TurnObservation(
                    context_tokens=40_000 + 6_000 * turn + n,
                    model="claude-sonnet-4-5",
                    new_content_tokens=6_000 + n,
                    tool_output_tokens=(2_000 + n + turn,),
                    tool_calls=("read_file",),
                    window=200_000,
                )
            )


BOUND = 2_112
"""Bytes per conversation: the 2 KiB target (docs/benchmarks.md, not met) plus 64. Judging a
compaction by its fixed part and by the turns it bought keeps two more fields on each record
and two on the analyzer, which put this fill at about 2,062 bytes (``pytest -s`` on this file
prints the figure). A regression guard, not the target: growth past the bound needs a reason
in docs/benchmarks.md."""


def test_an_idle_conversation_with_two_compactions_stays_near_two_kib() -> None:
    """Heap kept per conversation (registry entry, analyzer, trackers, records) stays
    within :data:`BOUND`."""
    registry = ConversationRegistry(Settings(max_conversations=CONVERSATIONS + 1))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _fill(registry)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(registry) == CONVERSATIONS
    print(f"{kept / CONVERSATIONS:,.0f} bytes per idle conversation")
    assert kept / CONVERSATIONS < BOUND
