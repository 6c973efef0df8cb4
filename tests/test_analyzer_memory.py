"""An idle conversation stays small: the registry is meant to hold 100,000 of them."""

from __future__ import annotations

import gc
import tracemalloc

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
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


BOUND = 2_048
"""Bytes per conversation: the 2 KiB target of the processor's memory (docs/benchmarks.md).
This fill keeps about 1,420 bytes (2,037 before settled records were kept packed; ``pytest -s``
on this file prints the figure). Growth past the bound needs a reason in docs/benchmarks.md."""


def test_an_idle_conversation_with_two_compactions_stays_within_two_kib() -> None:
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


def _kept_per_long_conversation(turns: int, conversations: int = 10) -> float:
    """Heap kept per conversation of ``turns`` turns, two calls with known inputs each (a
    read of a new file, an edit of a new one every fifth turn), a compaction every 40."""
    settings = Settings(max_conversations=conversations + 1, max_compactions_per_conversation=4)
    registry = ConversationRegistry(settings)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(conversations):
            analyzer = registry.get(f"long-{n}")
            for turn in range(1, turns + 1):
                if turn % 40 == 0:
                    analyzer.observe_compaction(
                        CompactionObservation(CompactionSource.EXPLICIT, tokens_before=150_000,
                                              tokens_after=30_000, compaction_id=f"c{n}-{turn}")
                    )  # fmt: skip
                edit = turn % 5 == 0
                analyzer.observe_turn(
                    TurnObservation(30_000 + 900 * (turn % 40), new_content_tokens=900,
                                    tool_output_tokens=(700, 200),
                                    tool_calls=("Read", "Edit" if edit else "Bash"),
                                    tool_arguments=(f'{{"file_path": "/f{turn}"}}',
                                                    f'{{"file_path": "/e{turn}"}}' if edit
                                                    else '{"command": "ls"}'))
                )  # fmt: skip
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / conversations
    finally:
        tracemalloc.stop()


def test_a_long_conversation_stops_growing_at_its_caps() -> None:
    """Past its caps (records, rediscovery keys and edited paths), a conversation three times
    longer keeps no more memory: an agent process's memory per conversation is bounded."""
    _kept_per_long_conversation(400, 2)  # the shared memos (tool categories...) filled first
    at_caps = _kept_per_long_conversation(400)
    three_times = _kept_per_long_conversation(1_200)
    print(f"{at_caps:,.0f} and {three_times:,.0f} bytes per conversation of 400 and 1,200 turns")
    assert three_times <= at_caps * 1.02
