"""The generated agents' repeats after a compaction, and what the instrumentation measures."""

from __future__ import annotations

from typing import Any


def test_the_measured_rediscovery_is_the_scripted_one(sample: dict[Any, Any]) -> None:
    """On every compaction matched to its truth, the calls its rediscovery span counts are
    the dropped reads the agent was scripted to fetch again, and the sample has some."""
    from benchmarks.truth.harness import rediscovery_rows

    rows = [row for p in sample.values() for row in rediscovery_rows(p.run, p.observed)]
    scripted = [r for r in rows if r[3] is not None]
    assert scripted
    assert [r[1] for r in scripted] == [r[3] for r in scripted]
    assert any(r[3] for r in scripted)


def test_only_a_scripted_repeat_repeats_an_input(sample: dict[Any, Any]) -> None:
    """Every call's input names a path of its own unless it fetches a dropped call again,
    so a repeat is never chance: per agent, repeated (tool, path) pairs are the re-reads."""
    for played in sample.values():
        for agent in played.run.agents:
            seen: set[tuple[str, str]] = set()
            repeats = 0
            for turn in agent.turns:
                key = (turn.tool, turn.path)
                repeats += key in seen
                seen.add(key)
            truths = [t for t in played.run.truths if t.agent == agent.name]
            assert repeats <= sum(t.rereads for t in truths)
