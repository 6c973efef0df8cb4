"""Analyzing a transcript streams it: memory does not grow with the transcript's length."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.report.build import analyze_files
from tests.transcripts.long_session import write_long_session

SHORT, LONG = 4_000_000, 16_000_000
"""Bytes of the two transcripts: the long one is four times the short one."""


def _peak(path: Path) -> tuple[int, int]:
    """The peak of memory allocated while analyzing ``path``, and the turns it counted."""
    tracemalloc.start()
    try:
        report = analyze_files([path], Settings())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (conversation,) = report.conversations
    return peak, conversation.turn_count


def test_four_times_the_transcript_costs_no_more_memory_per_turn(tmp_path: Path) -> None:
    """Quadrupling a transcript (7,800 turns, 105 compactions) adds under 1.5 MB to the peak
    (the record ledger's 24-48 bytes a record and the compactions' analyses), where keeping
    every turn's analysis added 5.7 MB; the turns are still all counted."""
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    short_turns = write_long_session(short, SHORT)
    long_turns = write_long_session(long, LONG)
    _peak(short)  # the engine's bounded caches filled once, as in a run of many files
    short_peak, short_counted = _peak(short)
    long_peak, long_counted = _peak(long)
    assert (short_counted, long_counted) == (short_turns, long_turns)
    assert long_turns > 3.5 * short_turns
    assert long_peak - short_peak < 1_500_000, (short_peak, long_peak)
