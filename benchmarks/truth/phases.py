"""The phase plan of a generated agent: which phase each call is in, its tool and its report.

An agent works in *blocks*, one phase each, in the boundary incident's order (explore, hypothesize,
patch, verify, then patch and verify again or a new exploration). Every call of a
block asks for that phase's most telling tool (read, think, edit, run the tests),
so an inferred phase has the evidence a real agent gives. With reported phases the
agent also calls ``report_phase`` before each call:

- the first call of a block (not the first block) is a *straddle*: the new phase
  0.44-0.50, the old one 0.02-0.08 below it (the boundary incident's turn 30);
- the next two calls *settle*: the new phase 0.60-0.70 (the boundary incident's turn 31);
- the rest are *held*: 0.80-0.92 (the boundary incident's turns 28 and 34).

:meth:`PhasePlan.boundary` states the truth of "the phase was straddling two phases
after one was held with confidence" for a compaction first seen on a given call.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

PHASES = ("explore", "hypothesize", "patch", "verify")
TOOLS = {
    "explore": ("read_file", "grep", "list_files"),
    "hypothesize": ("think", "update_plan"),
    "patch": ("edit_file", "apply_patch"),
    "verify": ("run_tests",),
}
READ_ONLY = frozenset({"explore"})
"""Phases whose tools only read: reading is evidence for hypothesize as well, so an inferred
belief in them tops out near 0.83, under the inferred hold of 0.9, and leaving them is no
veto by design (docs/signals.md, known limits); with inferred phases they have no truth."""
HELD_BLOCK = 4
"""Calls a block needs before its phase counts as held with confidence."""
EVIDENCE_MINIMUM = 3
"""Calls with tool evidence before an inferred phase is known at all."""
SETTLE_CALLS = 2


@dataclass(frozen=True, slots=True)
class Step:
    """One call's phase: the block's phase, position in the block, tool and report."""

    phase: str
    previous: str | None
    index: int
    previous_length: int
    tool: str
    report: dict[str, float] | None

    @property
    def kind(self) -> str:
        """``held``, ``straddle`` or ``settle`` (what the report says, reported or not)."""
        if self.previous is None or self.index >= 1 + SETTLE_CALLS:
            return "held"
        return "straddle" if self.index == 0 else "settle"


class PhasePlan:
    """The blocks of one agent, drawn as the agent goes; ``force`` starts a block now."""

    def __init__(self, rng: random.Random, reported: bool) -> None:
        self.rng = rng
        self.reported = reported
        self.steps: list[Step] = []
        self._phase = "explore"
        self._previous: str | None = None
        self._previous_length = 0
        self._index = 0
        self._length = rng.randint(5, 9)

    def next(self, force: bool = False) -> Step:
        """The step of the next call; with ``force`` (or at a block's end) a new block starts."""
        if self.steps and (force or self._index >= self._length):
            self._new_block()
        step = Step(
            phase=self._phase,
            previous=self._previous,
            index=self._index,
            previous_length=self._previous_length,
            tool=self.rng.choice(TOOLS[self._phase]),
            report=None,
        )
        if self.reported:
            step = dataclasses.replace(step, report=self._report(step))
        self.steps.append(step)
        self._index += 1
        return step

    def _new_block(self) -> None:
        following = {
            "explore": "hypothesize",
            "hypothesize": "patch",
            "patch": "verify",
            "verify": self.rng.choice(("patch", "explore")),
        }
        self._previous, self._previous_length = self._phase, self._index
        self._phase = following[self._phase]
        self._index = 0
        self._length = self.rng.randint(5, 9)

    def _report(self, step: Step) -> dict[str, float]:
        rng = self.rng
        kind = step.kind
        if kind == "straddle":
            top = rng.uniform(0.44, 0.50)
            second = top - rng.uniform(0.02, 0.08)
            named = {step.phase: top, str(step.previous): second}
        else:
            named = {step.phase: rng.uniform(0.60, 0.70) if kind == "settle" else 0.0}
            if kind == "held":
                named[step.phase] = rng.uniform(0.80, 0.92)
        rest = [p for p in PHASES if p not in named]
        left = 1.0 - sum(named.values())
        weights = [rng.uniform(0.5, 1.5) for _ in rest]
        for phase, weight in zip(rest, weights, strict=True):
            named[phase] = left * weight / sum(weights)
        return {p: round(named[p], 4) for p in PHASES}

    def would_straddle_held(self) -> bool:
        """Whether a block forced now would follow a phase held with confidence."""
        return self._index >= HELD_BLOCK

    def boundary(self, turn: int) -> bool | None:
        """Truth of "straddling after a held phase" for a compaction first seen on call ``turn``.

        Reported phases: the report made before call ``turn`` decides (straddle after a
        block of at least ``HELD_BLOCK`` calls: True; held: False; settle, or a straddle
        after a shorter block: None, no truth). Inferred phases: the evidence up to call
        ``turn - 1``: fewer than ``EVIDENCE_MINIMUM`` calls: False (unknown is no
        boundary); the first call of a block after a held block: True, unless the held
        block only read (``READ_ONLY``: None); a block held for ``HELD_BLOCK`` calls or
        more: False; otherwise None.
        """
        if self.reported:
            step = self.steps[turn - 1]
        else:
            if turn - 1 < EVIDENCE_MINIMUM:
                return False
            step = self.steps[turn - 2]
        if step.kind == "held" and (self.reported or step.index >= HELD_BLOCK):
            return False
        if step.index == 0 and step.previous is not None:
            if not self.reported and step.previous in READ_ONLY:
                return None  # reads alone never reach the inferred hold (docs/signals.md)
            return True if step.previous_length >= HELD_BLOCK else None
        return None
