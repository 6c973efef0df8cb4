"""Same input, same telemetry: sampled runs under two PYTHONHASHSEED values in two processes."""

from __future__ import annotations

from benchmarks.truth import detection as detection_truth
from benchmarks.truth.limits import KNOWN_LIMITS
from tests.truth.conftest import SEED

RUNS = [
    ["identical_replies", 0, SEED],
    ["interleaved_no_ids", 0, SEED],
    ["livelock_run", 0, SEED],
]


def test_runs_give_the_same_spans_under_two_hash_seeds() -> None:
    """Canonical spans match across PYTHONHASHSEED 0 and 1, except a documented known limit."""
    groups = {seed: [detection_truth._spawn(RUNS, seed)] for seed in "01"}
    collected = detection_truth._collect(groups)
    left, right = collected["0"], collected["1"]
    assert (
        [r["seed"] for r in left]
        == [r["seed"] for r in right]
        == [f"{s}:{n}:{i}" for n, i, s in RUNS]
    )
    assert not [r for r in left + right if "crash" in r]
    differing = {a["class"] for a, b in zip(left, right, strict=True) if a["digest"] != b["digest"]}
    assert {n for n in differing if (n, "determinism") not in KNOWN_LIMITS} == set()
