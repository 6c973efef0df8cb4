"""The targets for ours' overhead, judged with the noise in view.

The four statements of ``TARGETS``, on anthropic. Each becomes differences that must
be negative (ours - OpenLLMetry, ours - 1.5 x python-genai, ours at 2,000 messages - 2 x ours
at 20, ...), computed within each pass from the per-pass added times, so slow drift of the
shared machine cancels; the mean over passes and its 90 % confidence interval decide: ``met``
when the whole interval is below zero, ``missed`` when it is above, ``within noise``
otherwise. A statement is met when every one of its differences is met, missed when any is.

The clock is own time (call time minus time inside the SDK, ``clock``) wherever both
sides of a difference have exact own time (``OWN_TIME_EXACT``): it is measured in one process
and resolves tenths of a millisecond at every length. Differences with OpenInference, which
also works inside the SDK call, use the process's CPU time per call.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.overhead.configs import BY_KEY, OURS, OWN_TIME_EXACT
from benchmarks.overhead.report import Row

# Two-sided 90 % Student t quantiles by degrees of freedom.
_T90 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860}
MET, MISSED, NOISE, UNMEASURED = "met", "missed", "within noise", "not measured"

LIGHTER = "Lighter than OpenLLMetry and OpenInference at every length and mode"
STREAMING = "Lighter than the official python-genai packages when streaming"
NON_STREAMING = (
    "Within 1.5x of python-genai's own time when not streaming, while doing the analysis it "
    "does not"
)
HISTORY = "Cost growing with a call's new messages, not with the history"
TARGETS = (LIGHTER, STREAMING, NON_STREAMING, HISTORY)
OFFICIAL, FLOOR_F = "official", "telemetry_floor"
FACTOR_OFFICIAL = 1.5
"""Ours' own time may be this multiple of python-genai's when not streaming."""
FACTOR_HISTORY = 2.0
"""Ours' own time at the longest history may be this multiple of that at the shortest: a cost
that walked the history would grow with it (100x from 20 to 2,000 messages); twice allows for
the colder CPU caches after the SDK's work on a 3.4 MB request, which (f), with no history at
all, shows as well."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One statement: its state, the figures in short (for the table), every difference."""

    target: str
    state: str
    summary: str
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
    if not states:
        return UNMEASURED
    if MISSED in states:
        return MISSED
    return MET if all(s == MET for s in states) else NOISE


def _ms(rows: Sequence[Row | None]) -> str:
    return " / ".join("–" if r is None or r.added_ms is None else f"{r.added_ms:.2f}" for r in rows)


@dataclass(frozen=True, slots=True)
class _Rows:
    """The rows of one provider in both clocks, and the lengths measured."""

    cpu: Sequence[Row]
    own: Sequence[Row]
    lengths: Sequence[int]

    def pick(self, a: str, b: str) -> tuple[Sequence[Row], str]:
        """Own time when both configurations have it exactly and it was measured, else CPU."""
        if self.own and a in OWN_TIME_EXACT and b in OWN_TIME_EXACT:
            return self.own, "own time"
        return self.cpu, "CPU time"

    def diff(
        self, a: str, b: str, stream: bool, lengths: tuple[int, int], factor: float = 1.0
    ) -> tuple[Interval, str] | None:
        """added(a at lengths[0]) - factor x added(b at lengths[1]) per pass, with its clock."""
        rows, clock = self.pick(a, b)
        ra, rb = _find(rows, a, stream, lengths[0]), _find(rows, b, stream, lengths[1])
        if ra is None or rb is None:
            return None
        return interval(paired(ra, rb, factor)), clock


def _mode(stream: bool) -> str:
    return "streaming" if stream else "non-streaming"


def _lighter(rows: _Rows) -> Verdict:
    states, details, spans = [], [], []
    for config in ("openllmetry", "openinference"):
        means, clocks = [], set()
        for stream in (False, True):
            for n in rows.lengths:
                if (found := rows.diff(OURS, config, stream, (n, n))) is None:
                    continue
                diff, clock = found
                states.append(diff.state)
                means.append(diff.mean)
                clocks.add(clock)
                label = BY_KEY[config].label
                details.append(f"{_mode(stream)}, {n:,} msgs, ours - {label} ({clock}): {diff}")
        if means:
            label = BY_KEY[config].label.split(" ", 1)[0]
            spans.append(
                f"ours - {label} {max(means):+.2f} to {min(means):+.2f} ms "
                f"({', '.join(sorted(clocks))})"
            )
    return Verdict(LIGHTER, _combine(states), "; ".join(spans), "; ".join(details))


def _official(rows: _Rows, stream: bool, factor: float, target: str) -> Verdict:
    states, details = [], []
    for n in rows.lengths:
        if (found := rows.diff(OURS, OFFICIAL, stream, (n, n), factor)) is None:
            continue
        diff, clock = found
        states.append(diff.state)
        times = "" if factor == 1 else f"{factor:g} x "
        details.append(f"{_mode(stream)}, {n:,} msgs, ours - {times}(c) ({clock}): {diff}")
    src, clock = rows.pick(OURS, OFFICIAL)
    ours = [_find(src, OURS, stream, n) for n in rows.lengths]
    theirs = [_find(src, OFFICIAL, stream, n) for n in rows.lengths]
    scaled = " / ".join(
        "–" if r is None or r.added_ms is None else f"{factor * r.added_ms:.2f}" for r in theirs
    )
    at = " / ".join(f"{n:,}" for n in rows.lengths)
    prefix = "" if factor == 1 else f"{factor:g} x "
    summary = f"{_mode(stream)} {clock}: ours {_ms(ours)} ms against {prefix}(c) {scaled} ms"
    return Verdict(target, _combine(states), f"{summary} at {at} msgs", "; ".join(details))


def _history(rows: _Rows) -> Verdict:
    if len(rows.lengths) < 2:
        return Verdict(HISTORY, UNMEASURED, "one length only", "")
    lo, hi = rows.lengths[0], rows.lengths[-1]
    src, clock = rows.pick(OURS, FLOOR_F)
    states, details, parts = [], [], []
    for stream in (False, True):
        if (found := rows.diff(OURS, OURS, stream, (hi, lo), FACTOR_HISTORY)) is None:
            continue
        diff, clock = found
        states.append(diff.state)
        details.append(
            f"{_mode(stream)}, ours at {hi:,} - {FACTOR_HISTORY:g} x ours at {lo:,} msgs "
            f"({clock}): {diff}"
        )
        ours = _ms([_find(src, OURS, stream, n) for n in (lo, hi)]).replace(" / ", " → ")
        floor = _ms([_find(src, FLOOR_F, stream, n) for n in (lo, hi)]).replace(" / ", " → ")
        parts.append(f"{_mode(stream)} {ours} ms ((f) {floor})")
    summary = f"{clock}, ours at {lo:,} → {hi:,} msgs: " + "; ".join(parts)
    return Verdict(HISTORY, _combine(states), summary, "; ".join(details))


def evaluate_targets(
    rows: Sequence[Row], provider: str = "anthropic", own: Sequence[Row] = ()
) -> list[Verdict]:
    """The four statements of ``TARGETS`` on ``provider``'s rows (CPU time, and own time)."""
    mine = [r for r in rows if r.provider == provider]
    lengths = sorted({r.length for r in mine if r.length})
    by = _Rows(mine, [r for r in own if r.provider == provider], lengths)
    if not lengths or all(_find(mine, OURS, s, n) is None for s in (False, True) for n in lengths):
        return [Verdict(t, UNMEASURED, "ours not run, or no span emitted", "") for t in TARGETS]
    return [
        _lighter(by),
        _official(by, True, 1.0, STREAMING),
        _official(by, False, FACTOR_OFFICIAL, NON_STREAMING),
        _history(by),
    ]
