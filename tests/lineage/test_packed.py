"""Settled compaction records kept packed: read back equal, of the same types, and small."""

from __future__ import annotations

import dataclasses
import math
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.lineage import LineageTracker
from otel_compaction.lineage.packed import PackedRecord, pack, unpacked
from otel_compaction.lineage.tracker import PACKED_RECORDS
from otel_compaction.model import (
    CompactionObservation,
    CompactionRecord,
    Cycle,
    SummarizerCost,
    TurnObservation,
)
from otel_compaction.processor import snapshot_codec as codec
from otel_compaction.semconv import CompactionMode, CompactionSource

CID = "conv-1"

ints = st.integers(-(2**63), 2**63 - 1)
"""Any int the record's sizes may hold, 32-bit and 64-bit."""
maybe_int = st.none() | st.integers(0, 400_000) | ints
maybe_float = st.none() | st.floats(allow_nan=False) | st.just(-0.0)
maybe_str = st.none() | st.text(max_size=8)

records = st.builds(
    CompactionRecord,
    compaction_id=st.text(min_size=1, max_size=12),
    conversation_id=st.just(CID),
    turn_index=st.integers(0, 10_000) | ints,
    source=st.sampled_from(CompactionSource),
    mode=st.sampled_from(CompactionMode),
    trigger=maybe_str,
    tokens_before=maybe_int,
    tokens_after=st.integers(0, 400_000),
    summary_tokens=maybe_int,
    retained_tail_tokens=maybe_int,
    duplicated_tokens=maybe_int,
    carried_over_tokens=maybe_int,
    parent_id=maybe_str,
    root_id=st.text(max_size=8),
    generation=st.integers(0, 50),
    cycle=st.none() | st.builds(Cycle, ints, ints, ints, ints),
    token_fraction=maybe_float,
    failed=st.booleans(),
    summary_fingerprint=maybe_str,
    schema_coverage=maybe_float,
    missing_fields=st.sampled_from([(), ("goal",), ("plan", "next_action")]),
    timestamp=maybe_float,
    window=maybe_int,
    tokens_after_reported=maybe_int,
    error=maybe_str,
    lineage_assumed=st.booleans(),
    growth_per_turn=maybe_float,
    summarizer=st.none() | st.builds(SummarizerCost, st.integers(1, 3), st.integers(0, 10**6)),
    fixed_tokens=maybe_int,
    compacted_tokens=maybe_int,
    summary_template=st.none() | st.sampled_from(["claude_code", "pinned", "unknown"]),
)


def _types(record: CompactionRecord) -> list[type]:
    return [type(getattr(record, f.name)) for f in dataclasses.fields(record)]


@given(records)
def test_a_record_reads_back_equal_after_packing(record: CompactionRecord) -> None:
    """Packed and unpacked, any record of plain field types is the record it was, field for
    field and type for type (None, 64-bit ints, -0.0, cycles, rare fields included)."""
    packed = pack(record)
    assert isinstance(packed, PackedRecord)
    back = packed.unpack(CID)
    assert back == record
    assert _types(back) == _types(record)
    assert math.copysign(1, back.timestamp or 1.0) == math.copysign(1, record.timestamp or 1.0)
    assert (packed.mode, packed.failed) == (record.mode, record.failed)
    assert unpacked(packed, CID) == record
    assert unpacked(record, CID) is record


def _record(**changes: Any) -> CompactionRecord:
    """The benchmark's settled record: explicit, lossy, with a cycle."""
    base = CompactionRecord(
        compaction_id="c11-8", conversation_id=CID, turn_index=8,
        source=CompactionSource.EXPLICIT, mode=CompactionMode.LOSSY, trigger="auto",
        tokens_before=64_000, tokens_after=40_000, summary_tokens=None,
        retained_tail_tokens=None, duplicated_tokens=None, carried_over_tokens=None,
        parent_id=None, root_id="c11-8", generation=0, cycle=Cycle(4, 24_000, 24_000, 0),
        token_fraction=0.32, timestamp=1_794_528_080.0, window=200_000, growth_per_turn=4500.0,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


def test_a_record_of_other_types_is_kept_as_it_is() -> None:
    """A value not of its field's exact type (a bool for an int, an int past 64 bits, an
    int where a float goes, a plain str for an enum) leaves the record unpacked."""
    for changes in (
        {"tokens_before": True},
        {"window": 2**64},
        {"token_fraction": 1},
        {"mode": "lossy"},
        {"cycle": Cycle(4, 2**70, 0, 0)},
    ):
        record = _record(**changes)
        assert pack(record) is record, changes


def test_a_packed_record_is_under_200_bytes() -> None:
    """The benchmark's record packs into under 200 bytes (object and bytes together), where
    the record alone takes 280 and its ints, floats and cycle about 200 more."""
    packed = pack(_record())
    assert isinstance(packed, PackedRecord)
    numbers = packed._numbers  # the size is what is pinned
    assert sys.getsizeof(packed) + sys.getsizeof(numbers) < 200
    assert sys.getsizeof(_record()) == 280


def _observe(tracker: LineageTracker) -> tuple[CompactionRecord, CompactionRecord]:
    """Two compactions, the first settled by a later call, the second at once."""
    first = tracker.observe_compaction(
        CompactionObservation(CompactionSource.EXPLICIT, tokens_before=50_000, trigger="auto"),
        window=200_000,
    )
    tracker.observe_turn(first.turn_index, 30_000, 2_000)
    settled = tracker.settle(30_000, 4_000)
    assert settled is not None
    second = tracker.observe_compaction(
        CompactionObservation(
            CompactionSource.ANTHROPIC, tokens_before=90_000, context_after=31_000
        ),
        window=200_000,
    )
    return settled, second


def test_the_tracker_keeps_settled_records_packed_and_reads_them_back() -> None:
    """Settled records are kept packed; ``records``, ``last`` and ``state()`` give back
    the records as they were made, and a compaction still finds its parent among them."""
    tracker = LineageTracker(CID, Settings())
    settled, second = _observe(tracker)
    kept = tracker._records  # how they are kept is what is pinned
    assert [type(r) for r in kept] == [PackedRecord, PackedRecord]
    assert tracker.records == (settled, second)
    assert tracker.last == second
    assert tracker.state()["records"] == (settled, second)
    assert tracker.knows(settled.compaction_id)
    third = tracker.observe_compaction(
        CompactionObservation(CompactionSource.EXPLICIT, continues_lineage=True)
    )
    assert (third.parent_id, third.root_id, third.generation) == (
        second.compaction_id, second.root_id, second.generation + 1
    )  # fmt: skip
    assert third.cycle is not None


def test_a_snapshot_round_trip_restores_packed_records() -> None:
    """An analyzer's state through the snapshot codec restores records equal to the
    original's, packed again on the restored analyzer, with an unchanged digest."""
    analyzer = ConversationAnalyzer(CID, Settings())
    for turn in range(1, 9):
        if turn % 4 == 0:
            analyzer.observe_compaction(
                CompactionObservation(CompactionSource.EXPLICIT, tokens_before=20_000 * turn)
            )
        analyzer.observe_turn(TurnObservation(40_000 + turn, model="claude-sonnet-4-5"))
    raw = codec.encode_analyzer(analyzer)
    restored = ConversationAnalyzer(CID, Settings())
    codec.apply_state(restored, codec.decode_state(raw))
    assert restored.compactions == analyzer.compactions
    assert restored.state() == analyzer.state()
    assert codec.encode_analyzer(restored) == raw
    kept = restored._lineage._records  # how they are kept is what is pinned
    assert [type(r) for r in kept] == [PackedRecord, PackedRecord]


def test_a_conversation_keeps_at_most_packed_records_packed() -> None:
    """Past :data:`PACKED_RECORDS` settled compactions, later ones are kept as they are
    (each compaction unpacks the packed ones), and every record still reads back."""
    tracker = LineageTracker(CID, Settings())
    made = []
    for n in range(PACKED_RECORDS + 3):
        made.append(
            tracker.observe_compaction(
                CompactionObservation(
                    CompactionSource.EXPLICIT, tokens_before=50_000 + n, context_after=30_000 + n
                )
            )
        )
    kinds = [type(r) for r in tracker._records]  # how they are kept is what is pinned
    assert kinds == [PackedRecord] * PACKED_RECORDS + [CompactionRecord] * 3
    assert tracker.records == tuple(made)
