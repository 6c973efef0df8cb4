"""Precision and recall of every outcome of a run, as sets of facts.

Each outcome turns the truth and the observation into facts keyed by (agent, turn):

- ``found``: a compaction exists at that key;
- ``mode`` / ``generation``: the compaction at that key has this mode / generation;
- ``size_after``: its ``compaction.tokens.after`` is within 5% of the server's count
  of the first call that sees the compacted context;
- one outcome per detector: a finding of that kind on the compaction at that key.

``precision = |observed ∩ true| / |observed|``, ``recall = |observed ∩ true| / |true|``,
with a key whose truth is None (don't-care) left out of both. ``conversation`` is
pairwise: a fact is "calls i and j are in the same conversation", over the calls
whose request is not byte-identical to a request of another agent (no wire evidence
could tell those apart).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from benchmarks.truth.model import CompactionTruth, Observed, ObservedCompaction
from benchmarks.truth.rules import KINDS

ATTRIBUTES = ("found", "mode", "generation", "size_after")
OUTCOMES = (*ATTRIBUTES, "conversation", *KINDS)
SIZE_TOLERANCE = 0.05

Fact = tuple[Any, ...]


@dataclass
class Tally:
    """True positives, false positives and false negatives of one outcome."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Tally) -> None:
        """Add another tally's counts to this one."""
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    @property
    def precision(self) -> float | None:
        """tp / (tp + fp), or None with nothing observed."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """tp / (tp + fn), or None with nothing true."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class Miss:
    """One fact the instrumentation got wrong: missed (fn) or made up (fp)."""

    outcome: str
    side: str
    fact: Fact

    def to_json(self) -> dict[str, Any]:
        """The miss as a plain dict."""
        return {"outcome": self.outcome, "side": self.side, "fact": list(self.fact)}


@dataclass
class RunScore:
    """The tallies and misses of one run."""

    tallies: dict[str, Tally] = field(default_factory=dict)
    misses: list[Miss] = field(default_factory=list)


def _compare(outcome: str, true: Iterable[Fact], seen: Iterable[Fact], score: RunScore) -> None:
    t, o = Counter(true), Counter(seen)
    both = t & o
    tally = Tally(sum(both.values()), sum((o - t).values()), sum((t - o).values()))
    score.tallies[outcome] = tally
    score.misses += [Miss(outcome, "fn", f) for f in sorted((t - o).elements(), key=repr)]
    score.misses += [Miss(outcome, "fp", f) for f in sorted((o - t).elements(), key=repr)]


def _value(outcome: str, c: CompactionTruth | ObservedCompaction, truth: Any = None) -> Any:
    if outcome == "found":
        return True
    if outcome == "mode":
        return c.mode
    if outcome == "generation":
        return c.generation
    if isinstance(c, CompactionTruth):
        return c.after_tokens
    after = c.tokens_after
    if truth is not None and after is not None and abs(after - truth) <= SIZE_TOLERANCE * truth:
        return truth
    return after


def score_run(
    truths: Sequence[CompactionTruth],
    observed: Observed,
    agents: Sequence[str],
    ambiguous: frozenset[int],
) -> RunScore:
    """Every outcome's tally of one run (``agents``: the agent of each call, in order)."""
    score = RunScore()
    by_key: dict[tuple[str | None, int], CompactionTruth] = {(t.agent, t.turn): t for t in truths}
    for outcome in ATTRIBUTES:
        values = [((t.agent, t.turn), _value(outcome, t)) for t in truths]
        skip: set[tuple[str | None, int]] = {key for key, value in values if value is None}
        true: list[Fact] = [(*key, value) for key, value in values if key not in skip]
        seen: list[Fact] = []
        for c in observed.compactions:
            key = (c.agent, c.turn)
            if key in skip:
                continue
            match = by_key.get(key)
            reference = _value(outcome, match) if match is not None else None
            seen.append((*key, _value(outcome, c, reference)))
        _compare(outcome, true, seen, score)
    for kind in KINDS:
        skip = {k for k, t in by_key.items() if t.expected.get(kind) is None}
        true = [(t.agent, t.turn) for t in truths if t.expected.get(kind)]
        seen = [
            (c.agent, c.turn)
            for c in observed.compactions
            if kind in c.findings and (c.agent, c.turn) not in skip
        ]
        _compare(kind, true, seen, score)
    _conversations(agents, observed.conversations, ambiguous, score)
    return score


def _conversations(
    agents: Sequence[str], ids: Sequence[str], ambiguous: frozenset[int], score: RunScore
) -> None:
    calls = [i for i in range(min(len(agents), len(ids))) if i not in ambiguous]
    true, seen = [], []
    for i, j in combinations(calls, 2):
        if agents[i] == agents[j]:
            true.append((i, j))
        if ids[i] == ids[j]:
            seen.append((i, j))
    t, o = set(true), set(seen)
    tally = Tally(len(t & o), len(o - t), len(t - o))
    score.tallies["conversation"] = tally
    if tally.fp or tally.fn:
        score.misses.append(Miss("conversation", "fn" if tally.fn else "fp", _groups(agents, ids)))


def _groups(agents: Sequence[str], ids: Sequence[str]) -> Fact:
    """The calls of each agent as conversation labels: ``("a", "0001112")``-style facts."""
    names: dict[str, str] = {}
    for cid in ids:
        names.setdefault(cid, str(len(names)))
    out: dict[str, str] = {}
    for agent, cid in zip(agents, ids, strict=False):
        out[agent] = out.get(agent, "") + names[cid]
    return tuple(f"{agent}:{labels}" for agent, labels in sorted(out.items()))


def ambiguous_calls(bodies: Sequence[Any], agents: Sequence[str]) -> frozenset[int]:
    """Calls whose request body equals a request of another agent."""
    owners: dict[str, set[str]] = {}
    keys = [json.dumps(b, sort_keys=True, default=str) for b in bodies]
    for key, agent in zip(keys, agents, strict=False):
        owners.setdefault(key, set()).add(agent)
    return frozenset(i for i, key in enumerate(keys) if len(owners[key]) > 1)
