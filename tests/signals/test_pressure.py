"""Token fraction, attention decay and the per-conversation pressure tracker."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from otel_compaction.config import Settings
from otel_compaction.model import Pressure
from otel_compaction.signals import PressureTracker, attention_decay, token_fraction


@pytest.mark.parametrize(
    ("tokens", "window", "fraction"),
    [
        (142_000, 200_000, 0.71),
        (0, 200_000, 0.0),
        (250_000, 200_000, 1.0),
        (-5, 200_000, 0.0),
        (1_000, 0, 0.0),
        (1_000, -1, 0.0),
    ],
)
def test_token_fraction_is_clipped_ratio(tokens: int, window: int, fraction: float) -> None:
    """token_fraction is tokens / window in [0, 1]; a non-positive window gives 0."""
    assert token_fraction(tokens, window) == pytest.approx(fraction)


def test_attention_decay_weights_newest_first() -> None:
    """The newest output has weight 1, the one before it decay, then decay**2..."""
    sizes = [1_000, 2_000, 4_000]  # oldest first
    expected = (4_000 + 0.5 * 2_000 + 0.25 * 1_000) / 100_000
    assert attention_decay(sizes, 100_000, k=8, decay=0.5) == pytest.approx(expected)


def test_attention_decay_counts_only_last_k() -> None:
    """Outputs older than the last K do not count."""
    assert attention_decay([90_000, 10, 20], 100_000, k=2, decay=1.0) == pytest.approx(30 / 1e5)


def test_attention_decay_is_clipped_and_safe() -> None:
    """The sum is clipped to 1; negative sizes, k=0 and a zero window give no pressure."""
    assert attention_decay([300_000], 200_000, k=8, decay=0.8) == 1.0
    assert attention_decay([-50, 100], 1_000, k=8, decay=1.0) == pytest.approx(0.1)
    assert attention_decay([100], 1_000, k=0, decay=0.8) == 0.0
    assert attention_decay([100], 0, k=8, decay=0.8) == 0.0
    assert attention_decay([], 1_000, k=8, decay=0.8) == 0.0


def test_tracker_keeps_last_k_across_turns() -> None:
    """The tracker remembers at most K outputs across turns and decays by output, not turn."""
    tracker = PressureTracker(Settings(attention_window=3, attention_decay=0.5))
    tracker.observe(10_000, 100_000, (8_000,))
    tracker.observe(20_000, 100_000, (1_000, 2_000))
    pressure = tracker.observe(30_000, 100_000, (4_000,))
    assert tracker.recent_tool_outputs == (1_000, 2_000, 4_000)
    assert pressure.attention_decay == pytest.approx((4_000 + 1_000 + 250) / 100_000)
    assert pressure == Pressure(
        context_tokens=30_000,
        window=100_000,
        token_fraction=0.3,
        attention_decay=pressure.attention_decay,
    )


def test_tracker_turn_without_outputs_keeps_memory() -> None:
    """A turn without tool outputs reports the same attention decay as before."""
    tracker = PressureTracker(Settings())
    first = tracker.observe(1_000, 10_000, (2_000,))
    second = tracker.observe(1_500, 10_000)
    assert second.attention_decay == first.attention_decay == pytest.approx(0.2)


def test_tracker_clear_forgets_outputs() -> None:
    """clear() drops the remembered outputs (after a compaction removed them)."""
    tracker = PressureTracker(Settings())
    tracker.observe(1_000, 10_000, (5_000,))
    tracker.clear()
    assert tracker.observe(1_000, 10_000).attention_decay == 0.0


def test_a_full_tracker_takes_new_outputs_without_growing() -> None:
    """Once K sizes are kept, further turns shift outputs in without allocating more: the
    heap held by many full trackers is the same after 20 more turns of each."""
    k = 8
    tracemalloc.start()  # before the trackers: what a turn frees is counted too
    try:
        trackers = [PressureTracker(Settings(attention_window=k)) for _ in range(500)]
        for n, tracker in enumerate(trackers):
            tracker.observe(1_000 + n, 200_000, tuple(range(n, n + k)))
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for turn in range(20):
            for n, tracker in enumerate(trackers):
                tracker.observe(2_000 + turn, 200_000, (n + turn, n * 2 + turn))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [t.recent_tool_outputs[-2:] for t in trackers[:2]] == [(19, 19), (20, 21)]
    assert all(len(t.recent_tool_outputs) == k for t in trackers)
    # An array over-allocated by appending holds dozens of bytes more per tracker.
    assert grown / len(trackers) < 8


def test_context_tokens_is_that_of_last_without_building_it() -> None:
    """context_tokens answers last's context tokens: None before a turn, the last turn's
    after it, after clear() and on a tracker restored from its state."""
    tracker = PressureTracker(Settings())
    assert (tracker.context_tokens, tracker.last) == (None, None)
    tracker.observe(1_000, 10_000, (2_000,))
    tracker.observe(3_000, 10_000)
    assert tracker.last is not None
    assert tracker.context_tokens == tracker.last.context_tokens == 3_000
    tracker.clear()
    assert tracker.last is not None
    assert tracker.context_tokens == tracker.last.context_tokens == 3_000
    restored = PressureTracker(Settings())
    restored.restore(tracker.state())
    assert restored.context_tokens == 3_000
