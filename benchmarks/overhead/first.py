"""The first call of a new conversation: its cells, its timing in the worker, its report.

An agent process that ran conversations before pays, on the first call of a new one, for
whatever the instrumentation does with a history it has never seen (ours: describe every
message once, look for a conversation it continues among the remembered ones). The
target: ours' own time at most twice python-genai's first call plus the cost of reading the
new history once, with 8 recent conversations of the same length in the same thread.

*Reading the new history once* is measured in the worker, outside the call, as the CPU time
of ``otel_compaction.inference.messages.describe`` over every message of the request: one
walk of the history's content, the least any analysis of it does.

A first-call cell (anthropic, non-streaming; ``plain``, ``official`` and ``ours``): 8 untimed
first calls of conversations of ``length`` messages (the thread's recent conversations, then
``gc.freeze()``), then ``calls`` timed first calls, each of a new conversation with its own
content, a ``gc.collect()`` before each. The first timed call's spans are kept for the doc.
A *task* cell times instead a new conversation's most common first call, one user message
(a new task), after the same 8 recent conversations: it could replace any of them whole
(``inference.history``, step 5), so ours compares it with each, a bounded part of each.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.overhead.report import per_call_ms

CONFIGS = ("plain", "official", "ours")
"""Who runs first-call cells: the baseline, python-genai (the peer of the target) and ours."""
RECENT = 8
"""Conversations placed in the thread before the timed first calls."""
LENGTHS = (2000, 10000)
QUICK_LENGTHS = (2000,)
CALLS = {2000: 4, 10000: 2}
QUICK_CALLS = 1
TASK_CALLS = 4
"""Timed one-message first calls per task cell (each a few milliseconds at most)."""
TARGET = "ours' first call at most 2 x python-genai's first call + reading the new history once"


def first_cells(config: str, quick: bool) -> list[dict[str, Any]]:
    """The first-call cells of ``config`` (none for configurations outside ``CONFIGS``)."""
    if config not in CONFIGS:
        return []
    lengths = QUICK_LENGTHS if quick else LENGTHS
    cells: list[dict[str, Any]] = []
    for n in lengths:
        calls = QUICK_CALLS if quick else CALLS[n]
        cells.append({"first": True, "stream": False, "length": n, "calls": calls})
        cells.append({"first": True, "task": True, "stream": False, "length": n,
                      "calls": TASK_CALLS})  # fmt: skip
    return cells


def run_first_cell(
    cell: Mapping[str, Any],
    call: Callable[[list[dict[str, Any]], bool], int],
    make: Callable[[str, int], list[dict[str, Any]]],
    prefix: str,
    clock: Any,
    capture: Callable[[bool], list[dict[str, Any]]],
) -> dict[str, Any]:
    """Time ``cell["calls"]`` first calls after ``RECENT`` untimed ones (see the module).

    ``capture(True)`` starts keeping spans, ``capture(False)`` stops and returns them.
    """
    from otel_compaction.inference.messages import describe

    length, task = int(cell["length"]), bool(cell.get("task"))
    prefix = f"{prefix}task" if task else prefix
    for n in range(RECENT):
        call(make(f"{prefix}-recent{n}", length), False)
    gc.collect()
    gc.freeze()
    out: dict[str, Any] = {"first": True, "stream": False, "length": length, "recent": RECENT}
    out["task"] = task
    wall_ns, cpu_ns, inner_ns, read_ns = [], [], [], []
    for n in range(int(cell["calls"])):
        messages = _task(f"{prefix}-first{n}") if task else make(f"{prefix}-first{n}", length)
        started = time.process_time_ns()
        for message in messages:
            describe(message)
        read_ns.append(time.process_time_ns() - started)
        if n == 0:
            capture(True)
        gc.collect()
        if clock:
            clock.inner_ns = 0
        wall, cpu = time.perf_counter_ns(), time.process_time_ns()
        call(messages, False)
        wall_ns.append(time.perf_counter_ns() - wall)
        cpu_ns.append(time.process_time_ns() - cpu)
        inner_ns.append(clock.inner_ns if clock else 0)
        if n == 0:
            out["verify"] = capture(False)
    out.update(times_ns=wall_ns, cpu_ns=cpu_ns, read_ns=read_ns, spans_per_call=1.0)
    if clock:
        out["inner_ns"] = inner_ns
    return out


def _task(tag: str) -> list[dict[str, Any]]:
    """A new task: one user message of its own."""
    text = f"Task {tag}: the tests of module {tag} fail since the last change; fix them."
    return [{"role": "user", "content": text}]


@dataclass(frozen=True, slots=True)
class FirstRow:
    """One configuration's first calls at one length, medians pooled over passes (ms)."""

    config: str
    length: int
    n: int
    own_ms: float | None
    cpu_ms: float
    read_ms: float
    turn_index: int | None
    task: bool = False
    """A one-message first call after the recent conversations of ``length`` messages."""


def summarize_first(runs: Iterable[Mapping[str, Any]]) -> list[FirstRow]:
    """The first-call rows of the runs (anthropic), by configuration and length."""
    pooled: dict[tuple[str, int, bool], dict[str, list[float]]] = {}
    turns: dict[tuple[str, int, bool], int | None] = {}
    for run in runs:
        for cell in run.get("cells", []):
            if not cell.get("first") or cell.get("error") or run.get("error"):
                continue
            key = (run["config"], int(cell["length"]), bool(cell.get("task")))
            into = pooled.setdefault(key, {"own": [], "cpu": [], "read": []})
            if cell.get("inner_ns"):
                into["own"] += per_call_ms(cell, "own")
            into["cpu"] += per_call_ms(cell, "cpu")
            into["read"] += [t / 1e6 for t in cell["read_ns"]]
            turns[key] = next((s.get("turn_index") for s in cell.get("verify", [])), None)
    rows = []
    for key, times in sorted(pooled.items(), key=lambda i: (i[0][2], i[0][1], i[0][0])):
        config, length, task = key
        own = statistics.median(times["own"]) if times["own"] else None
        rows.append(
            FirstRow(
                config, length, len(times["cpu"]), own, statistics.median(times["cpu"]),
                statistics.median(times["read"]), turns[key], task,
            )
        )  # fmt: skip
    return rows


def first_verdicts(rows: Sequence[FirstRow]) -> list[str]:
    """Per length (and task): the target's figures (own time, less the baseline's) and met
    or not."""
    by = {(r.config, r.length, r.task): r for r in rows}
    lines = []
    for task, length in sorted({(r.task, r.length) for r in rows}):
        ours, peer, base = (by.get((c, length, task)) for c in ("ours", "official", "plain"))
        where = f"a one-message task after {length:,}" if task else f"{length:,}"
        if ours is None or peer is None or base is None or None in (ours.own_ms, peer.own_ms):
            lines.append(f"- **not measured** at {where} messages")
            continue
        shims = base.own_ms or 0.0
        mine, theirs = (ours.own_ms or 0.0) - shims, (peer.own_ms or 0.0) - shims
        bound = 2 * max(theirs, 0.0) + ours.read_ms
        state = "met" if mine <= bound else "missed"
        lines.append(
            f"- **{state}** at {where} messages: ours {mine:.1f} ms against 2 x "
            f"{theirs:.1f} ms (python-genai) + {ours.read_ms:.1f} ms (reading the history "
            f"once) = {bound:.1f} ms"
        )
    return lines


def render_first(rows: Sequence[FirstRow]) -> list[str]:
    """The markdown part: the table and the verdicts (nothing when no first call ran)."""
    if not rows:
        return []
    out = [
        "",
        f"### First call of a new conversation (anthropic, {RECENT} recent conversations)",
        "",
        f"Own time (wall time outside the SDK call), CPU time per call and the CPU time of "
        f"reading the new history once (`describe` over every message), medians. Target: "
        f"{TARGET}; the verdicts take the own times less the baseline's (the clock's shims). "
        f"*1 after N*: a one-message task after the recent conversations of N messages.",
        "",
        "| messages | configuration | calls | own ms | CPU ms | read once ms | turn |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        own = "-" if r.own_ms is None else f"{r.own_ms:.1f}"
        turn = "-" if r.turn_index is None else str(r.turn_index)
        messages = f"1 after {r.length:,}" if r.task else f"{r.length:,}"
        out.append(
            f"| {messages} | {r.config} | {r.n} | {own} | {r.cpu_ms:.1f} | "
            f"{r.read_ms:.1f} | {turn} |"
        )
    return [*out, "", *first_verdicts(rows)]
