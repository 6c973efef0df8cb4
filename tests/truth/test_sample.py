"""The sampled runs: every one scored, and every miss is a known limit with its reason."""

from __future__ import annotations

from typing import Any

from benchmarks.truth.limits import UNEXPLAINED, reason_for
from benchmarks.truth.score import OUTCOMES


def test_every_sampled_run_has_one_inference_span_per_call(sample: dict[Any, Any]) -> None:
    """The harness reads one inference span per SDK call in every sampled run."""
    assert {key: p.observed.errors for key, p in sample.items() if p.observed.errors} == {}
    assert all(len(p.observed.conversations) == len(p.run.calls) for p in sample.values())


def test_every_sampled_run_compacts_as_its_class_says(sample: dict[Any, Any]) -> None:
    """Each class but the negative control generates at least one compaction per run."""
    empty = [key for key, p in sample.items() if not p.run.truths and key[0] != "fresh_task"]
    assert empty == []
    assert all(not p.run.truths for key, p in sample.items() if key[0] == "fresh_task")


def test_every_miss_of_the_sample_is_a_known_limit(sample: dict[Any, Any]) -> None:
    """An outcome below 100% on the sample has a recorded reason (``KNOWN_LIMITS``)."""
    unexplained = sorted(
        (key[0], outcome, p.seed)
        for key, p in sample.items()
        for outcome in OUTCOMES
        if (t := p.score.tallies.get(outcome)) is not None
        and (t.fp or t.fn)
        and reason_for(key[0], outcome) == UNEXPLAINED
    )
    assert unexplained == []
