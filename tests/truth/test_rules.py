"""The detectors' truths: the rules of the notes applied to what the generator knows."""

from __future__ import annotations

from benchmarks.truth.model import CompactionTruth
from benchmarks.truth.rules import (
    BOUNDARY,
    INEFFECTIVE,
    LIVELOCK,
    SHORT_RUN,
    boundary,
    expect,
    ineffective,
)

WINDOW = 10_000


def _truth(turn: int, **fields: object) -> CompactionTruth:
    values: dict[str, object] = {
        "agent": "a",
        "turn": turn,
        "mode": "lossy",
        "kind": "rewrite",
        "generation": 0,
        "style": "schema",
        "failed": False,
        "pressure": True,
        "trigger_tokens": 8_000,
        "before_tokens": 8_100,
        "window": WINDOW,
        "after_tokens": 3_000,
    }
    values.update(fields)
    return CompactionTruth(**values)  # type: ignore[arg-type]


def _run(turns: list[int], content: int = 100) -> list[CompactionTruth]:
    truths = [_truth(t) for t in turns]
    expect(truths, dict.fromkeys(range(1, max(turns) + 1), content), {})
    return truths


def test_note_004s_livelock_fires_where_the_note_says() -> None:
    """Intervals 9, 9, 9, 9, 7, 5, 3 under flat content: livelock at the last compaction only."""
    truths = _run([10, 19, 28, 37, 46, 53, 58, 61])
    assert [t.expected[LIVELOCK] for t in truths] == [False] * 7 + [True]


def test_note_004s_reset_run_is_no_livelock() -> None:
    """Intervals 11, 10, 12, 9 never make a livelock."""
    assert not any(t.expected[LIVELOCK] for t in _run([10, 21, 31, 43, 52]))


def test_a_shrink_of_exactly_20_percent_does_not_count() -> None:
    """Intervals 25, 20, 16, 12 (each shrink 20% or less) are not accelerating."""
    assert not any(t.expected[LIVELOCK] for t in _run([1, 26, 46, 62, 74]))


def test_three_compactions_within_three_turns_are_thrashing() -> None:
    """Three intervals of at most three turns in a row: a livelock (Claude Code's guard)."""
    assert [t.expected[LIVELOCK] for t in _run([10, 13, 15, 18])] == [False, False, False, True]


def test_two_ineffective_compactions_in_a_row_are_a_no_progress_livelock() -> None:
    """Two compactions in a row leaving the next call above the trigger: both ineffective, the
    second a no-progress livelock."""
    truths = [_truth(5, after_tokens=9_000), _truth(9, after_tokens=9_000)]
    expect(truths, {}, {})
    assert [t.expected[INEFFECTIVE] for t in truths] == [True, True]
    assert [t.expected[LIVELOCK] for t in truths] == [False, True]


def test_a_size_within_the_margin_of_the_trigger_has_no_truth() -> None:
    """After within 3% of the window of the trigger: neither effective nor ineffective."""
    assert ineffective(_truth(5, after_tokens=8_100), [], {6: 8_300}) is None
    assert ineffective(_truth(5, after_tokens=8_400), [], {6: 8_600}) is True
    assert ineffective(_truth(5, after_tokens=7_600), [], {6: 7_650}) is False


def test_the_calls_a_compaction_bought_are_counted() -> None:
    """The next compaction one call later: ineffective; two calls later: not, unless the
    second call came within the margin of the trigger (an estimate may say one call)."""
    assert ineffective(_truth(5), [_truth(6)], {}) is True
    assert ineffective(_truth(5), [_truth(7)], {6: 5_000}) is False
    assert ineffective(_truth(5), [_truth(7)], {6: 7_900}) is None


def test_the_last_compaction_is_judged_by_its_second_call() -> None:
    """No compaction follows: the second call at the trigger would have compacted again."""
    assert ineffective(_truth(5, after_tokens=7_000), [], {6: 8_500}) is True
    assert ineffective(_truth(5, after_tokens=7_000), [], {6: 7_300}) is False
    assert ineffective(_truth(5, after_tokens=7_000), [], {}) is None


def test_a_scheduled_compaction_is_judged_by_its_share() -> None:
    """Below the trigger, on a schedule: ineffective only when it reclaimed under 5%."""
    scheduled = {"pressure": False, "trigger_tokens": 9_000, "before_tokens": 9_000}
    assert ineffective(_truth(5, after_tokens=8_950, **scheduled), [], {}) is True
    assert ineffective(_truth(5, after_tokens=8_000, **scheduled), [], {}) is False
    # within 3% of the window, in tokens, of 5% reclaimed: two estimates could disagree
    assert ineffective(_truth(5, after_tokens=8_600, **scheduled), [], {}) is None
    assert ineffective(_truth(5, after_tokens=8_950, window=100_000, **scheduled), [], {}) is None
    assert ineffective(_truth(5, mode="prune", **scheduled), [], {}) is False


def test_boundary_truth_needs_a_summarizing_mode_and_pressure() -> None:
    """Only a lossy or server compaction at pressure takes the phase truth."""
    assert boundary(_truth(5, boundary=True)) is True
    assert boundary(_truth(5, boundary=True, mode="server")) is True
    assert boundary(_truth(5, boundary=True, mode="server", failed=True)) is True
    assert boundary(_truth(5, boundary=True, mode="extractive")) is False
    assert boundary(_truth(5, boundary=True, mode="prune")) is False
    assert boundary(_truth(5, boundary=True, before_tokens=3_000)) is False
    assert boundary(_truth(5, boundary=None)) is None


def test_a_short_run_is_a_first_summary_before_turn_20_without_pressure() -> None:
    """Turn 12 at 30% of the window of a run that ended at call 15 is a short run; at
    pressure, at turn 20, or in a run that went on to call 40, it is not."""
    ended = dict.fromkeys(range(1, 16), 3_000)
    early = _truth(12, before_tokens=3_000, pressure=False)
    expect([early], {}, ended)
    assert early.expected[SHORT_RUN] is True
    pressed = _truth(12)
    expect([pressed], {}, ended)
    assert pressed.expected[SHORT_RUN] is False
    late = _truth(20, before_tokens=3_000, pressure=False)
    expect([late], {}, ended)
    assert late.expected[SHORT_RUN] is False
    went_on = _truth(12, before_tokens=3_000, pressure=False)
    expect([went_on], {}, dict.fromkeys(range(1, 41), 3_000))
    assert went_on.expected[SHORT_RUN] is False
    assert early.expected[BOUNDARY] is False
