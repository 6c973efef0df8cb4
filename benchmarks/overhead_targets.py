"""The issue's targets for ours, judged with the noise in view.

Each target is a difference that must be negative (e.g. ours - OpenLLMetry, or
ours - 2 x floor). It is computed within each pass, from the per-pass added times, so slow drift
of the shared machine cancels; the mean over passes and its 90 % confidence interval decide:
``met`` when the whole interval is below zero, ``missed`` when it is above, ``within noise``
otherwise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from overhead_configs import BY_KEY, COMPETITORS, FLOOR, OURS
from overhead_report import Row

# Two-sided 90 % Student t quantiles by degrees of freedom.
_T90 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860}
MET, MISSED, NOISE, UNMEASURED = "met", "missed", "within noise", "not measured"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target: ``met``, ``missed``, ``within noise`` or ``not measured``, and why."""

    target: str
    state: str
    detail: str


@dataclass(frozen=True, slots=True)
class Interval:
    """Mean of per-pass differences with its 90 % confidence interval (ms)."""

    mean: float
    low: float
    high: float

    @property
    def state(self) -> str:
        """Met when the whole interval is below zero, missed when above."""
        return MET if self.high < 0 else MISSED if self.low > 0 else NOISE

    def __str__(self) -> str:
        return f"{self.mean:+.2f} ms, 90% CI {self.low:+.2f}…{self.high:+.2f}"


def interval(diffs: Sequence[float]) -> Interval:
    """Mean and 90 % interval of ``diffs`` (a single value has no width)."""
    mean = statistics.fmean(diffs)
    if len(diffs) < 2:
        return Interval(mean, mean, mean)
    half = _T90.get(len(diffs) - 1, 1.645) * statistics.stdev(diffs) / math.sqrt(len(diffs))
    return Interval(mean, mean - half, mean + half)


def paired(a: Row, b: Row, factor: float = 1.0) -> list[float]:
    """Per pass: added(a) - factor x added(b), over the passes both were measured in."""
    b_by_pass = dict(zip(b.passes, b.pass_added_ms, strict=True))
    return [
        value - factor * b_by_pass[p]
        for p, value in zip(a.passes, a.pass_added_ms, strict=True)
        if p in b_by_pass
    ]


def _find(rows: Sequence[Row], config: str, stream: bool, length: int) -> Row | None:
    for r in rows:
        if (r.config, r.stream, r.length) == (config, stream, length) and r.spans_per_call:
            return r if r.pass_added_ms else None
    return None


def _combine(states: Sequence[str]) -> str:
    if MISSED in states:
        return MISSED
    return MET if states and all(s == MET for s in states) else NOISE


def _beats_competitors(rows: Sequence[Row], stream: bool, lengths: Sequence[int]) -> Verdict:
    states, details = [], []
    for n in lengths:
        ours = _find(rows, OURS, stream, n)
        for config in COMPETITORS:
            other = _find(rows, config, stream, n)
            if ours is None or other is None:
                continue
            diff = interval(paired(ours, other))
            states.append(diff.state)
            details.append(f"{n:,} msgs vs {BY_KEY[config].label}: {diff}")
    target = "adds less than each of (b)-(d) at every length"
    return Verdict(target, _combine(states), "; ".join(details))


def evaluate_targets(
    rows: Sequence[Row], provider: str = "anthropic", own: Sequence[Row] = ()
) -> list[Verdict]:
    """The three targets of issue 3, per streaming mode, on ``provider``'s rows.

    ``own`` (rows of own time, see ``overhead_clock``) adds an in-process judgement of the
    length target, which whole-call times at 2,000 messages can rarely resolve.
    """
    mine = [r for r in rows if r.provider == provider]
    lengths = sorted({r.length for r in mine if r.length})
    verdicts = []
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        small = _find(mine, OURS, stream, lengths[0]) if lengths else None
        large = _find(mine, OURS, stream, lengths[-1]) if lengths else None
        floor = _find(mine, FLOOR, stream, lengths[0]) if lengths else None
        if small is None or large is None:
            verdicts.append(Verdict(f"{mode}: all targets", UNMEASURED, "ours not run, or no span"))
            continue
        beats = _beats_competitors(mine, stream, lengths)
        verdicts.append(Verdict(f"{mode}: {beats.target}", beats.state, beats.detail))
        if floor is not None:
            diff = interval(paired(small, floor, 2.0))
            what = f"{mode}: within 2x of (a) at {lengths[0]:,} msgs (ours - 2 x floor)"
            verdicts.append(Verdict(what, diff.state, str(diff)))
        diff = interval(paired(large, small, 2.0))
        what = f"{mode}: {lengths[-1]:,} msgs at most 2x {lengths[0]:,} msgs (difference)"
        verdicts.append(Verdict(what, diff.state, str(diff)))
        own_small = _find(own, OURS, stream, lengths[0])
        own_large = _find(own, OURS, stream, lengths[-1])
        if own_small is not None and own_large is not None:
            diff = interval(paired(own_large, own_small, 2.0))
            what = what.replace("(difference)", "(own time, in-process)")
            verdicts.append(Verdict(what, diff.state, str(diff)))
    return verdicts
