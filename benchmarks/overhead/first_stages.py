"""The stages tool's ``--first`` run: where a new conversation's first call spends its time.

See ``overhead/stages.py`` (``--first``): the first calls of new conversations as the overhead
benchmark's first-call cells make them (``overhead/first.py``), with the stages of
``FIRST_STAGES`` besides the tool's, the collector's runs during the placement, and the
histories the store forgets freed in the call or, in a second run, by the tool after it.
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.overhead import worker
from benchmarks.overhead.clock import InnerClock
from benchmarks.overhead.first import RECENT
from benchmarks.overhead.history import anthropic_history
from benchmarks.overhead.stages import STAGES, Stage, Timers, resolve, setup

_INFERENCE = "otel_compaction.inference"
FIRST_STAGES: tuple[Stage, ...] = (
    Stage("infer the conversation (placement)", f"{_INFERENCE}._placer", "Placer.inferred"),
    Stage("remember the history (store, bounds)", f"{_INFERENCE}._store", "HistoryStore.save"),
)
"""Stages a first call goes through besides ``STAGES`` (``--first``)."""


class Keeper:
    """While ``on``, keeps every history the store forgets alive (``--first``, second run):
    they are freed by the tool between calls, not inside the call that forgot them."""

    STAGE = Stage("forget a history", "otel_compaction.inference._store", "HistoryStore.drop")

    def __init__(self) -> None:
        self.on = self.armed = False
        self.kept: list[Any] = []
        self.forgotten = 0
        """Histories forgotten while ``armed`` (a timed call), kept or not."""

    def install(self) -> None:
        owner, attribute, drop = resolve(self.STAGE)

        @functools.wraps(drop)
        def keeping(store: Any, cid: str) -> None:
            history = store.by_id.get(cid) if self.armed else None
            if history is not None:
                self.forgotten += 1
                if self.on:
                    self.kept.append(history)
            drop(store, cid)

        setattr(owner, attribute, keeping)


class Collections:
    """A ``gc.callbacks`` hook: the collector's runs and their thread CPU time while ``on``
    (set inside the placement, ``during``) and ``armed`` (a timed call)."""

    def __init__(self) -> None:
        self.on = self.armed = False
        self.runs = 0
        self.ns = 0
        self._start = 0

    def __call__(self, phase: str, _info: dict[str, Any]) -> None:
        if not (self.on and self.armed):
            return
        if phase == "start":
            self._start = time.thread_time_ns()
        else:
            self.runs += 1
            self.ns += time.thread_time_ns() - self._start

    def during(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with the hook on while it runs."""

        @functools.wraps(fn)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.on = True
            try:
                return fn(*args, **kwargs)
            finally:
                self.on = False

        return counted


def setup_first() -> tuple[tuple[InnerClock, worker.Call, Timers], Keeper, Collections]:
    """``setup`` with the first call's stages, the keeper and the collector hook on the
    placement (installed after the timers, so it holds the timed placement)."""
    clock, call, timers = setup((*STAGES, *FIRST_STAGES))
    keeper = Keeper()
    keeper.install()
    collections = Collections()
    owner, attribute, inferred = resolve(FIRST_STAGES[0])
    setattr(owner, attribute, collections.during(inferred))
    gc.callbacks.append(collections)
    return (clock, call, timers), keeper, collections


def run_first(
    length: int,
    calls: int,
    parts: tuple[InnerClock, worker.Call, Timers],
    keeper: Keeper,
    collections: Collections,
    keep: bool,
) -> dict[str, Any]:
    """Time ``calls`` first calls at ``length`` messages after ``RECENT`` untimed ones, with
    the forgotten histories freed in the call or (``keep``) by the tool after it."""
    from otel_compaction.inference.messages import describe

    clock, call, timers = parts
    timers.totals.clear()
    timers.hits.clear()
    collections.runs = collections.ns = keeper.forgotten = 0
    tag = f"f{length}{'k' if keep else ''}"
    for n in range(RECENT):
        call(anthropic_history(f"{tag}-recent{n}", length), False)
    gc.collect()
    gc.freeze()
    own, read = [], []
    for n in range(calls):
        messages = anthropic_history(f"{tag}-first{n}", length)
        start = time.thread_time_ns()
        for message in messages:
            describe(message)
        read.append(time.thread_time_ns() - start)
        gc.collect()
        keeper.on, clock.inner_ns = keep, 0
        timers.on = collections.armed = keeper.armed = True
        start = time.thread_time_ns()
        call(messages, False)
        own.append(time.thread_time_ns() - start - clock.inner_ns)
        keeper.on = timers.on = collections.armed = keeper.armed = False
        keeper.kept.clear()  # freed here, outside the timed call
    timers.check((*STAGES, *FIRST_STAGES))
    ranked = sorted(timers.totals.items(), key=lambda kv: -kv[1])
    return {
        "length": length,
        "calls": calls,
        "first": True,
        "forgotten_kept_by_the_tool": keep,
        "own_us_median": statistics.median(own) / 1e3,
        "read_once_us_median": statistics.median(read) / 1e3,
        "histories_forgotten_per_call": keeper.forgotten / calls,
        "collections_in_placement_per_call": collections.runs / calls,
        "collections_in_placement_us_mean": collections.ns / calls / 1e3,
        "stages_us_mean": {name: total / calls / 1e3 for name, total in ranked},
    }


def first_lines(freed: dict[str, Any], kept: dict[str, Any]) -> list[str]:
    """The printed report of one length's first calls (both runs)."""
    width = 44
    cost = freed["own_us_median"] - kept["own_us_median"]
    return [
        f"ours, first calls of {freed['length']} messages after {RECENT} recent ones, "
        f"{freed['calls']} calls a run, thread CPU time",
        f"  {'own time per call (median)':{width}s} {freed['own_us_median']:9.1f} µs",
        f"  {'  the same, forgotten histories kept':{width}s} {kept['own_us_median']:9.1f} µs",
        f"  {'  freeing what the store forgot (difference)':{width}s} {cost:9.1f} µs "
        f"({freed['histories_forgotten_per_call']:.1f} histories a call)",
        f"  {'reading the history once (outside the call)':{width}s} "
        f"{freed['read_once_us_median']:9.1f} µs",
        f"  {'collections during placement':{width}s} "
        f"{freed['collections_in_placement_us_mean']:9.1f} µs "
        f"({freed['collections_in_placement_per_call']:.1f} runs)",
        *(f"  {name:{width}s} {us:9.1f} µs" for name, us in freed["stages_us_mean"].items()),
    ]
