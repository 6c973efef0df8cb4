"""The lineage tracker: ids, parents, generations, overlaps, cycles and memory bounds."""

from __future__ import annotations

import gc
import random
import sys
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.lineage import LineageTracker, fingerprint
from otel_compaction.lineage.tracker import SKETCH_MEMORY
from otel_compaction.model import CompactionObservation, CompactionRecord
from otel_compaction.semconv import CompactionMode, CompactionSource

WRAP = "Here is a summary of the conversation to date:\n\n"


def prose(seed: int, n: int = 80) -> str:
    """A deterministic text of ``n`` words that shares no 5-word run with other seeds."""
    rng = random.Random(seed)
    return " ".join(f"w{seed}x{rng.randrange(10_000)}" for _ in range(n))


def obs(**kw: object) -> CompactionObservation:
    """A lossy compaction observation from an explicit source."""
    return CompactionObservation(source=CompactionSource.EXPLICIT, **kw)  # type: ignore[arg-type]


def test_ids_are_generated_or_taken() -> None:
    """A given id is kept; otherwise a uuid4 hex is generated."""
    t = LineageTracker("c", Settings())
    given_id = t.observe_compaction(obs(compaction_id="abc"))
    generated = t.observe_compaction(obs())
    assert given_id.compaction_id == "abc"
    assert len(generated.compaction_id) == 32
    assert int(generated.compaction_id, 16) >= 0


def test_summary_of_summary_chain_counts_generations() -> None:
    """A compaction whose summary carries the previous summary is one generation deeper."""
    t = LineageTracker("c", Settings())
    records: list[CompactionRecord] = []
    summary = prose(0)
    records.append(t.observe_compaction(obs(summary_text=summary, compacted_texts=(prose(99),))))
    for i in range(1, 5):
        new_summary = summary + " " + prose(i)
        records.append(
            t.observe_compaction(
                obs(summary_text=new_summary, compacted_texts=(WRAP + summary, prose(100 + i)))
            )
        )
        summary = new_summary
    assert [r.generation for r in records] == [0, 1, 2, 3, 4]
    assert [r.parent_id for r in records[1:]] == [r.compaction_id for r in records[:-1]]
    assert {r.root_id for r in records} == {records[0].compaction_id}


def test_a_fresh_summary_starts_a_new_lineage_though_it_replaced_the_old_one() -> None:
    """The livelock remedy: the previous summary sat in the region this compaction replaced,
    but the new summary was written from raw turns and carries none of it: generation 0."""
    t = LineageTracker("c", Settings())
    t.observe_compaction(obs(summary_text=prose(1), compacted_texts=(prose(50),)))
    fresh = t.observe_compaction(
        obs(summary_text=prose(2), compacted_texts=(WRAP + prose(1), prose(51)))
    )
    assert fresh.generation == 0
    assert fresh.parent_id is None
    assert fresh.carried_over_tokens == 0


def test_carrying_half_of_the_previous_summary_continues_its_lineage() -> None:
    """The carry-over measure: at least lineage_carry_over (0.5) of the earlier summary's
    5-grams in the new one continue it; a third does not."""
    t = LineageTracker("c", Settings())
    old = prose(1, 300)
    first = t.observe_compaction(obs(summary_text=old))
    words = old.split()
    half = t.observe_compaction(obs(summary_text=" ".join(words[:180]) + " " + prose(2)))
    assert half.parent_id == first.compaction_id
    t2 = LineageTracker("c2", Settings())
    t2.observe_compaction(obs(summary_text=old))
    third = t2.observe_compaction(obs(summary_text=" ".join(words[:100]) + " " + prose(3)))
    assert third.parent_id is None


def test_raw_only_compaction_starts_a_new_lineage() -> None:
    """A compaction built from raw turns only is generation 0 and its own root."""
    t = LineageTracker("c", Settings())
    first = t.observe_compaction(obs(summary_text=prose(1), compacted_texts=(prose(50),)))
    second = t.observe_compaction(
        obs(summary_text=prose(1) + " " + prose(2), compacted_texts=(WRAP + prose(1),))
    )
    raw = t.observe_compaction(obs(summary_text=prose(3), compacted_texts=(prose(51), prose(52))))
    assert second.generation == 1
    assert second.root_id == first.compaction_id
    assert raw.generation == 0
    assert raw.parent_id is None
    assert raw.root_id == raw.compaction_id


def test_newest_summary_in_the_region_is_the_parent() -> None:
    """When the region holds two earlier summaries, the newest one is the parent."""
    t = LineageTracker("c", Settings())
    a = t.observe_compaction(obs(summary_text=prose(1), continues_lineage=False))
    b = t.observe_compaction(obs(summary_text=prose(2), continues_lineage=False))
    c = t.observe_compaction(obs(compacted_texts=(prose(2), prose(1))))
    assert (a.generation, b.generation) == (0, 0)
    assert c.parent_id == b.compaction_id


def test_explicit_parent_wins() -> None:
    """A parent id from the source wins over text matching."""
    t = LineageTracker("c", Settings())
    a = t.observe_compaction(obs(summary_text=prose(1)))
    t.observe_compaction(obs(summary_text=prose(2), continues_lineage=False))
    c = t.observe_compaction(obs(parent_id=a.compaction_id, compacted_texts=(prose(2),)))
    assert c.parent_id == a.compaction_id
    assert c.generation == 1
    assert c.root_id == a.compaction_id


def test_unknown_explicit_parent_is_generation_one() -> None:
    """A parent the tracker never saw (or forgot) gives generation 1, rooted at the parent."""
    t = LineageTracker("c", Settings())
    r = t.observe_compaction(obs(parent_id="elsewhere"))
    assert (r.parent_id, r.root_id, r.generation) == ("elsewhere", "elsewhere", 1)


def test_continues_lineage_flags() -> None:
    """continues_lineage=True without texts chains to the previous one; False starts afresh."""
    t = LineageTracker("c", Settings())
    a = t.observe_compaction(obs(continues_lineage=True))
    b = t.observe_compaction(obs(continues_lineage=True))
    c = t.observe_compaction(obs(continues_lineage=False, compacted_texts=(prose(9),)))
    assert (a.parent_id, a.generation) == (None, 0)
    assert (b.parent_id, b.generation) == (a.compaction_id, 1)
    assert (c.parent_id, c.generation) == (None, 0)


def test_continues_lineage_false_wins_over_a_text_match() -> None:
    """A source that says the prior summary was dropped is believed."""
    t = LineageTracker("c", Settings())
    t.observe_compaction(obs(summary_text=prose(1)))
    r = t.observe_compaction(obs(continues_lineage=False, compacted_texts=(prose(1),)))
    assert r.generation == 0


def test_without_any_information_a_summary_is_assumed_compacted_again() -> None:
    """With no texts and no flags, a compaction continues the latest summary-producing one:
    a prune or a failed summary in between left that summary in place (assumed, marked)."""
    t = LineageTracker("c", Settings())
    a = t.observe_compaction(obs(tokens_before=100, tokens_after=10))
    b = t.observe_compaction(obs(tokens_before=100, tokens_after=10))
    prune = t.observe_compaction(obs(mode=CompactionMode.PRUNE))
    after_prune = t.observe_compaction(obs())
    failed = t.observe_compaction(obs(failed=True))
    after_failed = t.observe_compaction(obs())
    assert b.parent_id == a.compaction_id
    assert prune.generation == 0
    assert after_prune.parent_id == b.compaction_id
    assert failed.parent_id == after_prune.compaction_id
    assert after_failed.parent_id == after_prune.compaction_id
    assert after_failed.lineage_assumed


def test_is_known_summary_exact_wrapped_and_unknown() -> None:
    """Exact (whitespace-insensitive) and wrapped summaries are recognised; others are not."""
    t = LineageTracker("c", Settings())
    summary = prose(7)
    r = t.observe_compaction(obs(summary_text=summary))
    assert t.is_known_summary("  " + summary.replace(" ", "\n  ")) == r.compaction_id
    assert t.is_known_summary(WRAP + summary + "\n\n(continue)") == r.compaction_id
    assert t.is_known_summary(prose(8)) is None
    assert t.is_known_summary("") is None
    assert r.summary_fingerprint == fingerprint(summary)


def test_is_known_summary_tells_a_summary_from_its_successor() -> None:
    """An earlier summary is matched to itself, not to the later one that repeats it."""
    t = LineageTracker("c", Settings())
    early = prose(1)
    late = early + " " + prose(2, 20)
    a = t.observe_compaction(obs(summary_text=early))
    b = t.observe_compaction(obs(summary_text=late, compacted_texts=(early,)))
    assert t.is_known_summary(WRAP + early) == a.compaction_id
    assert t.is_known_summary(WRAP + late) == b.compaction_id


def test_duplicated_tokens_estimate_the_retained_tail_in_the_summary() -> None:
    """The share of the summary's shingles found in the retained tail, times its tokens."""
    t = LineageTracker("c", Settings())
    tail = prose(5, 40)
    summary = prose(6, 40) + " " + tail
    r = t.observe_compaction(obs(summary_text=summary, summary_tokens=800, retained_texts=(tail,)))
    assert r.duplicated_tokens is not None
    assert 360 <= r.duplicated_tokens <= 440  # about half of the summary repeats the tail
    none = t.observe_compaction(obs(summary_text=prose(7), retained_texts=(prose(8),)))
    assert none.duplicated_tokens == 0
    unknown = t.observe_compaction(obs(summary_text=prose(9)))
    assert unknown.duplicated_tokens is None
    no_text = t.observe_compaction(obs(retained_texts=(tail,)))
    assert no_text.duplicated_tokens is None


def test_carried_over_tokens_estimate_the_previous_summary_repeated() -> None:
    """Text of the parent summary restated in the child is counted as carried over."""
    t = LineageTracker("c", Settings())
    first = prose(1, 60)
    t.observe_compaction(obs(summary_text=first))
    second = first + " " + prose(2, 60)
    r = t.observe_compaction(obs(summary_text=second, summary_tokens=1000, continues_lineage=True))
    assert r.carried_over_tokens is not None
    assert 440 <= r.carried_over_tokens <= 520
    fresh = t.observe_compaction(obs(summary_text=prose(3), continues_lineage=True))
    assert fresh.carried_over_tokens == 0
    no_text = t.observe_compaction(obs(continues_lineage=True))
    assert no_text.carried_over_tokens is None


def test_carried_over_is_none_when_the_parent_text_is_unknown() -> None:
    """A parent whose summary text was never seen cannot be compared: None."""
    t = LineageTracker("c", Settings())
    t.observe_compaction(obs())
    r = t.observe_compaction(obs(summary_text=prose(1), continues_lineage=True))
    assert r.carried_over_tokens is None


def test_summary_tokens_estimated_from_text() -> None:
    """Without a reported size, the summary's tokens are estimated from its text."""
    t = LineageTracker("c", Settings())
    r = t.observe_compaction(obs(summary_text="x" * 400))
    assert r.summary_tokens == 100


def test_cycle_accounting_between_compactions() -> None:
    """Interval, new content, net growth and residual follow the livelock incident's definitions."""
    t = LineageTracker("c", Settings())
    for turn in range(1, 5):
        t.observe_turn(turn, 10_000 * turn, 500)
    first = t.observe_compaction(obs(tokens_before=45_000, tokens_after=12_000))
    for turn in range(5, 11):
        t.observe_turn(turn, 12_000 + 3_000 * (turn - 4), 1_000)
    second = t.observe_compaction(obs(tokens_before=33_000))
    assert first.cycle is None
    assert first.turn_index == 5
    assert second.turn_index == 11
    assert second.cycle is not None
    assert second.cycle.interval_turns == 6
    assert second.cycle.new_content_tokens == 6_000
    # The size after the first compaction is its first call's context (15,000), not the
    # 12,000 its source reported.
    assert second.cycle.net_growth_tokens == 33_000 - 15_000
    assert second.cycle.residual_tokens == 18_000 - 6_000
    assert second.cycle.new_content_per_turn == pytest.approx(1_000)


def test_cycle_falls_back_to_turn_context_sizes() -> None:
    """Without before/after sizes, the first and last turns of the cycle give the growth."""
    t = LineageTracker("c", Settings())
    t.observe_turn(1, 50_000, 0)
    t.observe_compaction(obs())
    t.observe_turn(2, 20_000, 400)
    t.observe_turn(3, 26_000, 400)
    t.observe_turn(4, 31_000, 400)
    r = t.observe_compaction(obs())
    assert r.cycle is not None
    assert (r.cycle.interval_turns, r.cycle.net_growth_tokens) == (3, 11_000)
    assert r.cycle.residual_tokens == 11_000 - 1_200


def test_token_fraction_needs_before_and_window() -> None:
    """token_fraction is tokens_before / window, None when either is unknown."""
    t = LineageTracker("c", Settings())
    assert t.observe_compaction(obs(tokens_before=150_000), window=200_000).token_fraction == 0.75
    assert t.observe_compaction(obs(tokens_before=150_000)).token_fraction is None
    assert t.observe_compaction(obs(), window=200_000).token_fraction is None


def test_memory_is_bounded() -> None:
    """At most max_compactions_per_conversation records and the bounded sketches of the
    last SKETCH_MEMORY summaries are kept: only those are recognised in a later text, and
    the tracker holds a few hundred KiB after 12 summaries of 3,000 words."""
    s = Settings(max_compactions_per_conversation=5)
    summaries: list[str] = []
    ids: list[str] = []
    gc.collect()
    tracemalloc.start()  # before the tracker: what it holds at the end, summaries aside
    try:
        before = tracemalloc.get_traced_memory()[0]
        t = LineageTracker("c", s)
        summary = ""
        for i in range(12):
            t.observe_turn(i + 1, 1_000, 10)
            # each summary carries the last 2,000 words of the one before
            summary = " ".join([*summary.split()[-2_000:], *prose(i, 1_000).split()])
            ids.append(t.observe_compaction(obs(summary_text=summary)).compaction_id)
            summaries.append(summary)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        held -= sum(sys.getsizeof(text) for text in summaries) + sys.getsizeof(summaries)
    finally:
        tracemalloc.stop()
    assert len(t.records) == 5
    assert t.records[-1].generation == 11
    # A text carrying summary j whole (not equal to it) is matched by j's sketch only.
    found = [t.is_known_summary(text + " and what came after") for text in summaries]
    assert found == [None] * (12 - SKETCH_MEMORY) + ids[-SKETCH_MEMORY:]
    assert held < 512 * 1024  # unbounded sketches (or all 12 of them) hold twice that or more


_steps = st.lists(
    st.tuples(
        st.sampled_from(["text", "raw", "none", "true", "false", "parent", "prune"]),
        st.integers(min_value=-3, max_value=12),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(_steps)
def test_generation_grows_along_every_lineage(steps: list[tuple[str, int]]) -> None:
    """Property: a child is one generation deeper than its (remembered) parent; intervals >= 0."""
    t = LineageTracker("c", Settings(max_compactions_per_conversation=8))
    seen: dict[str, CompactionRecord] = {}
    turn = 0
    for i, (kind, step) in enumerate(steps):
        turn = max(1, turn + step)
        prev = t.last
        kw: dict[str, object] = {"summary_text": prose(i, 30), "turn_index": turn}
        if kind == "text" and prev is not None:
            kw["compacted_texts"] = (WRAP + prose(i - 1, 30),)
        elif kind == "raw":
            kw["compacted_texts"] = (prose(1000 + i),)
        elif kind in ("true", "false"):
            kw["continues_lineage"] = kind == "true"
        elif kind == "parent" and t.records:
            kw["parent_id"] = random.Random(i).choice(t.records).compaction_id
        elif kind == "prune":
            kw["mode"] = CompactionMode.PRUNE
        r = t.observe_compaction(obs(**kw))
        parent = seen.get(r.parent_id) if r.parent_id else None
        if parent is not None:
            assert r.generation == parent.generation + 1
            assert r.root_id == parent.root_id
        elif r.parent_id is None:
            assert (r.generation, r.root_id) == (0, r.compaction_id)
        assert r.cycle is None or r.cycle.interval_turns >= 0
        seen[r.compaction_id] = r
