"""One run of a class, scored: the piece the benchmark and the CI test share.

``run_one("tail_rewrite", 7, seed=1)`` generates the class's seventh run of base seed
1 (the seed string ``"1:tail_rewrite:7"``, hashed by ``random.Random`` with SHA-512,
the same in every process), drives it through the real SDK clients and the
instrumentation, derives the detectors' truths and scores every outcome.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from benchmarks.truth.classes import CLASSES
from benchmarks.truth.model import Observed
from benchmarks.truth.rules import expect
from benchmarks.truth.run import Run, execute
from benchmarks.truth.score import RunScore, ambiguous_calls, score_run


def finalize(run: Run) -> None:
    """The phase truth of every compaction and each detector's truth, once the run is over."""
    for agent in run.agents:
        truths = [t for t in run.truths if t.agent == agent.name]
        for truth in truths:
            if truth.turn <= len(agent.plan.steps):
                truth.boundary = agent.plan.boundary(truth.turn)
        calls = [c for c in run.calls if c.agent == agent.name]
        content = {c.turn: c.content_tokens for c in calls}
        expect(truths, content, {c.turn: c.context_tokens for c in calls})


@dataclass(frozen=True, slots=True)
class Played:
    """One run, played and scored: the run (agents, requests, truth), the spans' story."""

    seed: str
    run: Run
    observed: Observed
    digest: str
    score: RunScore
    cpu_seconds: float


def play(name: str, index: int, seed: int) -> Played:
    """Generate, run and score run ``index`` of class ``name`` with base seed ``seed``."""
    truth_class = CLASSES[name]
    seed_text = f"{seed}:{name}:{index}"
    started = time.process_time()
    run, observed, digest = execute(truth_class.build, seed_text, truth_class.wires)
    finalize(run)
    agents = [c.agent for c in run.calls]
    ambiguous = ambiguous_calls([r.body for r in run.api.requests], agents)
    score = score_run(run.truths, observed, agents, ambiguous)
    return Played(seed_text, run, observed, digest, score, time.process_time() - started)


def run_one(name: str, index: int, seed: int) -> dict[str, Any]:
    """:func:`play`, as a JSON-ready result."""
    played = play(name, index, seed)
    run, observed, score = played.run, played.observed, played.score
    return {
        "class": name,
        "seed": played.seed,
        "params": run.params,
        "calls": len(run.calls),
        "cpu_seconds": round(played.cpu_seconds, 3),
        "digest": played.digest,
        "errors": list(observed.errors),
        "tallies": {k: [t.tp, t.fp, t.fn] for k, t in score.tallies.items()},
        "misses": [m.to_json() for m in score.misses],
        "truths": [_truth_json(t) for t in run.truths],
        "observed": [
            {
                "agent": c.agent,
                "turn": c.turn,
                "mode": c.mode,
                "generation": c.generation,
                "after": c.tokens_after,
                "findings": sorted(c.findings),
            }
            for c in observed.compactions
        ],
        "conversations": len(set(observed.conversations)),
        "rediscovery": rediscovery_rows(run, observed),
        "baselines": list(observed.baselines),
    }


def rediscovery_rows(run: Run, observed: Observed) -> list[list[Any]]:
    """Per compaction with a rediscovery span: [flagged boundary, calls, tokens measured,
    the calls and tokens the agent was scripted to redo]."""
    truths = {(t.agent, t.turn): t for t in run.truths}
    rows: list[list[Any]] = []
    for c in observed.compactions:
        if c.rediscovery is None:
            continue
        truth = truths.get((c.agent or "", c.turn))
        scripted = (truth.rereads, truth.reread_tokens) if truth is not None else (None, None)
        rows.append(["boundary_compaction" in c.findings, *c.rediscovery, *scripted])
    return rows


def _truth_json(t: Any) -> dict[str, Any]:
    return {
        "agent": t.agent,
        "turn": t.turn,
        "mode": t.mode,
        "kind": t.kind,
        "generation": t.generation,
        "before": t.before_tokens,
        "after": t.after_tokens,
        "trigger": t.trigger_tokens,
        "boundary": t.boundary,
        "expected": {k: v for k, v in t.expected.items() if v is not None},
    }
