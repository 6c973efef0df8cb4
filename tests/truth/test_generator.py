"""The generator does what its truth says: checked on the requests the fake API received."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.truth.rules import INEFFECTIVE, LIVELOCK


def _items(played: Any, agent: str, turn: int) -> list[Any]:
    """The history items of an agent's call ``turn`` as the fake API received them."""
    run = played.run
    index = next(i for i, c in enumerate(run.calls) if c.agent == agent and c.turn == turn)
    body = run.api.requests[index].body
    if "input" in body:
        return list(body["input"])
    messages = list(body["messages"])
    return messages[1:] if messages and messages[0].get("role") == "system" else messages


def _text(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def _of(sample: dict[Any, Any], name: str) -> list[Any]:
    return [p for (n, _), p in sample.items() if n == name]


def test_a_rewrite_sends_task_summary_and_exactly_the_kept_tail(sample: dict[Any, Any]) -> None:
    """After a tail rewrite the request is the task, one summary, then two items per kept turn."""
    checked = 0
    for played in _of(sample, "tail_rewrite"):
        agent = played.run.agents[0]
        for truth in played.run.truths:
            items = _items(played, truth.agent, truth.turn)
            assert items[0]["content"] == agent.task
            assert items[1]["role"] == "user"
            assert "fact a-" in items[1]["content"]
            assert len(items) == 2 + 2 * truth.kept_turns
            # the kept turns but the last were in the previous request, in the same order
            older = 2 * (truth.kept_turns - 1)
            if older > 0:
                before = _items(played, truth.agent, truth.turn - 1)
                assert items[2 : 2 + older] == before[-older:]
            checked += 1
    assert checked


def test_a_whole_history_replacement_sends_one_summary_message(sample: dict[Any, Any]) -> None:
    """Whole-history replacement: the request holds one user message, the task is gone."""
    for played in _of(sample, "whole_history"):
        agent = played.run.agents[0]
        for truth in played.run.truths:
            (item,) = _items(played, truth.agent, truth.turn)
            assert item["role"] == "user"
            assert item["content"] != agent.task
            assert "fact a-" in item["content"]  # built from the raw turns it replaced


def test_clearing_edits_the_very_dicts_the_history_holds(sample: dict[Any, Any]) -> None:
    """A prune of in-place clearing: same item count plus one turn, older outputs shorter."""
    checked = 0
    for played in _of(sample, "in_place_clearing"):
        for truth in (t for t in played.run.truths if t.mode == "prune"):
            before = _items(played, truth.agent, truth.turn - 1)
            after = _items(played, truth.agent, truth.turn)
            assert len(after) == len(before) + 2
            changed = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
            assert changed
            assert all(len(_text(after[i])) < len(_text(before[i])) for i in changed)
            checked += 1
    assert checked


def test_a_server_compaction_comes_back_in_the_response(sample: dict[Any, Any]) -> None:
    """A server-side compaction's call answers with a compaction block or item."""
    for played in _of(sample, "server_side"):
        agent = played.run.agents[0]
        for truth in played.run.truths:
            items = next(t.items for t in agent.turns if t.call == truth.turn)
            assert "compaction" in _text(items[:-1])


def test_twins_answer_alike_but_their_tools_do_not(sample: dict[Any, Any]) -> None:
    """Identical replies: the twins' assistant items match call for call; tool outputs differ."""
    for played in _of(sample, "identical_replies"):
        a, b = played.run.agents
        first = [(t.call, _text(t.items[0])) for t in a.turns if t.call <= 3]
        second = [(t.call, _text(t.items[0])) for t in b.turns if t.call <= 3]
        assert first == second
        assert _items(played, "a", 2)[-1] != _items(played, "b", 2)[-1]


def test_a_fixed_prefix_is_above_the_trigger_from_the_first_call(sample: dict[Any, Any]) -> None:
    """Fixed prefix: the first request is already above the trigger, and so is every after."""
    for played in _of(sample, "fixed_prefix"):
        run = played.run
        index = next(i for i, c in enumerate(run.calls) if c.turn == 1)
        assert run.api.requests[index]  # the call happened
        assert all(t.after_tokens >= run.trigger_tokens for t in run.truths)
        assert all(t.expected[INEFFECTIVE] for t in run.truths)


def test_note_004s_two_runs_have_their_generations(sample: dict[Any, Any]) -> None:
    """The livelock run counts generations 0, 1, 2, ...; the reset run stays at 0, no livelock."""
    for played in _of(sample, "livelock_run"):
        assert [t.generation for t in played.run.truths] == list(range(len(played.run.truths)))
        assert any(t.expected[LIVELOCK] for t in played.run.truths)
    for played in _of(sample, "reset_run"):
        assert {t.generation for t in played.run.truths} == {0}
        assert not any(t.expected[LIVELOCK] for t in played.run.truths)
