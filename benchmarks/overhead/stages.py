"""Where ours' own time goes: the stages of one instrumented call, timed in the call.

    benchmarks/run stages [--length 20,2000] [--calls 400] [--count-calls | --first]
        [--json FILE]

Runs the benchmark's agent (``benchmarks.overhead.worker.Agent``: the same client, transport and
histories as the overhead benchmark) with ours, anthropic, non-streaming, and replaces the
functions of ``STAGES`` with timers of the thread's CPU time. Prints the call's own time
(outside the SDK) and each stage's mean per timed call. Stages nest (``begin`` holds ``place``
and ``start span``); each timer adds about 1 µs; timers count only during the timed calls, not
while a new conversation's first call is made. ``--count-calls`` counts the Python function
calls per LLM call instead (ours, and the OpenTelemetry API and SDK on its behalf).

``--first`` times instead (``overhead/first_stages.py``) the first calls of new conversations
as the overhead benchmark's first-call cells do (``overhead/first.py``: ``RECENT`` untimed
first calls of the same length, then ``--calls`` timed ones, each of a new conversation), with
the stages of ``FIRST_STAGES`` as well, the collector's runs during the placement
(``gc.callbacks``) and the CPU time of reading the history once (``describe`` over every
message, outside the call). It runs twice: as is, and with every history the store forgets
kept alive by the tool until after the call; the difference in own time is what freeing them
costs the call (the caller's messages, when the store was their last holder).

The stages are internals of ``otel_compaction`` (and of the OpenTelemetry SDK), named in one
table. A stage that no longer resolves, or whose timer never fires during the calls (the code
no longer goes through that name), stops the run with an error naming it:
``tests/benchmarks/test_overhead_tools.py`` runs the tool, so a move of any of them fails the
tests until the table follows. A reading aid for ``docs/benchmarks.md``, not a benchmark of
record: the side-by-side figures come from ``overhead/run.py``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks._meta import commit, now
from benchmarks.overhead import worker
from benchmarks.overhead.clock import InnerClock
from benchmarks.overhead.configs import BY_KEY
from benchmarks.overhead.history import anthropic_history

_CALL = "otel_compaction.instrument._call"


@dataclass(frozen=True, slots=True)
class Stage:
    """One timed stage: the callable ``name`` (``Class.method`` for a method) of ``module``.

    ``module`` is where the name is looked up when the call runs, so a function imported into
    another module is named there (``_wrappers.begin``, not ``_begin.begin``).
    """

    label: str
    module: str
    name: str

    @property
    def where(self) -> str:
        """The dotted name, for messages."""
        return f"{self.module}.{self.name}"


STAGES: tuple[Stage, ...] = (
    Stage("begin (request, conversation, span)", "otel_compaction.instrument._wrappers", "begin"),
    Stage("place the request in its conversation", "otel_compaction.instrument._begin", "_place"),
    Stage("start the span (SDK)", "otel_compaction.instrument._begin", "start_inference_span"),
    Stage("complete (response read, finish)", "otel_compaction.instrument._wrappers", "complete"),
    Stage("finish (analysis, telemetry, end)", _CALL, "InferenceCall.finish"),
    Stage("turn (observation and analysis)", _CALL, "InferenceCall._turn"),
    Stage("observe_turn", "otel_compaction.engine.analyzer", "ConversationAnalyzer.observe_turn"),
    Stage("turn attributes", _CALL, "turn_attributes"),
    Stage("three histogram records (SDK)", _CALL, "InferenceCall._usage_metrics"),
    Stage(
        "token-fraction histogram record (SDK)",
        "otel_compaction.emit.metrics",
        "CompactionMetrics.record_turn",
    ),
    Stage("set_attributes (SDK)", "opentelemetry.sdk.trace", "Span.set_attributes"),
    Stage("end the span (SDK)", _CALL, "InferenceCall._end"),
)


class StageError(LookupError):
    """Stages that do not resolve or were never called; the message names each one."""


def resolve(stage: Stage) -> tuple[Any, str, Callable[..., Any]]:
    """The object holding the stage's callable, its attribute name, and the callable.

    Raises:
        StageError: the module, class or function is not where ``stage`` says.
    """
    try:
        owner: Any = importlib.import_module(stage.module)
        *path, attribute = stage.name.split(".")
        for part in path:
            owner = getattr(owner, part)
        fn = getattr(owner, attribute)
    except (ImportError, AttributeError) as exc:
        raise StageError(f"{stage.where} ({stage.label}): {exc}") from None
    if not callable(fn):
        raise StageError(f"{stage.where} ({stage.label}): not callable")
    return owner, attribute, fn


@dataclass
class Timers:
    """Thread CPU time and calls per stage, counted while ``on``."""

    on: bool = False
    totals: dict[str, int] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its thread CPU time added to ``totals[label]`` while ``on``."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.on:
                    self.totals[label] = self.totals.get(label, 0) + time.thread_time_ns() - start
                    self.hits[label] = self.hits.get(label, 0) + 1

        return timed

    def install(self, stages: Sequence[Stage]) -> None:
        """Replace every stage's callable with its timer; all unresolved stages at once."""
        resolved, errors = [], []
        for stage in stages:
            try:
                resolved.append((stage, *resolve(stage)))
            except StageError as exc:
                errors.append(str(exc))
        if errors:
            raise StageError("stages that moved (update STAGES):\n  " + "\n  ".join(errors))
        for stage, owner, attribute, fn in resolved:
            setattr(owner, attribute, self.wrap(stage.label, fn))

    def check(self, stages: Sequence[Stage]) -> None:
        """Raise naming the stages whose timers never fired: the call no longer uses them."""
        missed = [f"{s.where} ({s.label})" for s in stages if not self.hits.get(s.label)]
        if missed:
            raise StageError("stages never called (update STAGES):\n  " + "\n  ".join(missed))


class CallCounter:
    """A ``sys.setprofile`` hook: counts Python calls into ours and into OpenTelemetry."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        who = "otel_compaction" if "/otel_compaction/" in path else None
        if who is None and "/opentelemetry/" in path:
            who = "opentelemetry (API and SDK)"
        if who is not None:
            self.calls[who] = self.calls.get(who, 0) + 1


def setup(stages: Sequence[Stage]) -> tuple[InnerClock, worker.Call, Timers]:
    """Ours instrumented on the benchmark's providers, the SDK clock and timers on ``stages``
    (none when counting calls)."""
    _, tracer_provider, _, meter_provider = worker.providers()
    clock = InnerClock(time.thread_time_ns)
    clock.install()
    config = BY_KEY["ours"]
    worker.instrument(config, "anthropic", tracer_provider, meter_provider)
    timers = Timers()
    timers.install(stages)  # after instrumenting, so ours' wrappers call the timed ones
    return clock, worker.make_call("anthropic", config, tracer_provider), timers


def run(
    length: int, calls: int, warmup: int, counter: CallCounter | None, parts: tuple[Any, ...]
) -> dict[str, Any]:
    """Time ``calls`` calls at ``length`` messages: own time, and per stage or call counts."""
    clock, call, timers = parts
    timers.totals.clear()
    timers.hits.clear()
    agent = worker.Agent(call, anthropic_history, f"s{length}", clock)
    for _ in range(warmup):
        agent.step(length, False)
    gc.collect()
    gc.freeze()
    own = []
    for _ in range(calls):
        messages = agent.next_messages(length, False)
        timers.on = True
        clock.inner_ns = 0
        start = time.thread_time_ns()
        if counter is not None:
            sys.setprofile(counter)
        agent.call(messages, False)
        sys.setprofile(None)
        own.append(time.thread_time_ns() - start - clock.inner_ns)
        timers.on = False
    if counter is not None:
        calls_per = {who: n / calls for who, n in sorted(counter.calls.items())}
        counter.calls.clear()
        return {"length": length, "calls": calls, "python_calls_per_llm_call": calls_per}
    timers.check(STAGES)
    ranked = sorted(timers.totals.items(), key=lambda kv: -kv[1])
    return {
        "length": length,
        "calls": calls,
        "own_us_median": statistics.median(own) / 1e3,
        "stages_us_mean": {name: total / calls / 1e3 for name, total in ranked},
    }


def lines(result: dict[str, Any]) -> list[str]:
    """The printed report of one length."""
    if "python_calls_per_llm_call" in result:
        head = f"ours, {result['length']} messages, Python function calls per LLM call"
        counts = result["python_calls_per_llm_call"].items()
        return [head, *(f"  {who:40s} {n:7.1f}" for who, n in counts)]
    return [
        f"ours, {result['length']} messages, {result['calls']} calls, thread CPU time",
        f"  {'own time per call (median)':40s} {result['own_us_median']:7.1f} µs",
        *(f"  {name:40s} {us:7.1f} µs" for name, us in result["stages_us_mean"].items()),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the stages (or the call counts); 1 with the names when a stage moved."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--length", default="20", help="messages per call, e.g. 20,2000")
    parser.add_argument("--calls", type=int, default=400, help="timed calls (default 400)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first (default 20)")
    parser.add_argument(
        "--count-calls",
        action="store_true",
        help="count the Python function calls per LLM call (ours, the OTel API and SDK) instead",
    )
    parser.add_argument(
        "--first",
        action="store_true",
        help="time first calls of new conversations after recent ones instead (see the module)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    lengths = [int(n) for n in args.length.split(",")]
    if min(lengths) < 4 or args.calls < 1:
        parser.error("--length must be at least 4 and --calls at least 1")
    if args.first and args.count_calls:
        parser.error("--first and --count-calls are two different runs")
    warnings.simplefilter("ignore")
    results = []
    try:
        if args.first:
            from benchmarks.overhead.first_stages import first_lines, run_first, setup_first

            timed, keeper, collections = setup_first()
            for length in lengths:
                pair = [
                    run_first(length, args.calls, timed, keeper, collections, keep)
                    for keep in (False, True)
                ]
                results += pair
                print("\n".join(first_lines(*pair)), flush=True)
        else:
            parts = setup(() if args.count_calls else STAGES)
            for length in lengths:
                counter = CallCounter() if args.count_calls else None
                results.append(run(length, args.calls, args.warmup, counter, parts))
                print("\n".join(lines(results[-1])), flush=True)
    except StageError as exc:
        print(f"benchmarks.overhead.stages: {exc}", file=sys.stderr)
        return 1
    if args.json:
        command = " ".join(["benchmarks/run stages", *(sys.argv[1:] if argv is None else argv)])
        meta = {"date": now(), "commit": commit(), "command": command, "load": os.getloadavg()}
        args.json.write_text(json.dumps({"meta": meta, "runs": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
