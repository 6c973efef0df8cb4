"""Where ours' own time goes: the stages of one instrumented call, timed in the call.

    .venv-bench/bin/python benchmarks/overhead_stages.py [--length 20] [--calls 400] [--count-calls]

Runs the benchmark's agent (``overhead_worker.Agent``: the same client, transport and
histories as ``instrumentation_overhead.py``) with ours, non-streaming, and wraps the stages of
a call with timers of the thread's CPU time. Prints the call's own time (outside the SDK) and
each stage's mean per timed call. Stages nest (``begin`` holds ``place`` and ``start span``);
each timer adds about 1 µs. Timers run only during the timed calls, not while a new
conversation's first call is made. ``--count-calls`` counts the Python function calls per
LLM call instead (ours, and the OpenTelemetry API and SDK on its behalf). A reading aid for
``docs/benchmarks.md``, not a benchmark of record: the side-by-side figures come from
``instrumentation_overhead.py``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import overhead_clock
import overhead_worker as worker
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace import TracerProvider
from overhead_configs import BY_KEY
from overhead_history import anthropic_history

ON = [False]
TOTALS: dict[str, int] = {}
CALLS: dict[str, int] = {}


def _count_call(frame: Any, event: str, _arg: Any) -> None:
    """A ``sys.setprofile`` hook: count Python calls into ours and into OpenTelemetry."""
    if event != "call":
        return
    path = frame.f_code.co_filename
    who = "otel_compaction" if "/otel_compaction/" in path else None
    if who is None and "/opentelemetry/" in path:
        who = "opentelemetry (API and SDK)"
    if who is not None:
        CALLS[who] = CALLS.get(who, 0) + 1


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its thread CPU time added to ``TOTALS[name]`` during timed calls."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            if ON[0]:
                TOTALS[name] = TOTALS.get(name, 0) + time.thread_time_ns() - start

    return wrapper


def install_timers() -> None:
    """Wrap the stages of ours (after instrumenting, so the wrappers see the timed ones)."""
    from otel_compaction import analyzer
    from otel_compaction.emit.metrics import CompactionMetrics
    from otel_compaction.instrument import _begin, _call, _wrappers

    call = _call.InferenceCall
    _begin._place = timed("place the request in its conversation", _begin._place)
    _begin.start_inference_span = timed("start the span (SDK)", _begin.start_inference_span)
    _wrappers.begin = timed("begin (request, conversation, span)", _begin.begin)
    _wrappers.complete = timed("complete (response read, finish)", _wrappers.complete)
    call.finish = timed("finish (analysis, telemetry, end)", call.finish)
    call._turn = timed("turn (observation and analysis)", call._turn)
    cls = analyzer.ConversationAnalyzer
    cls.observe_turn = timed("observe_turn", cls.observe_turn)  # type: ignore[method-assign]
    _call.turn_attributes = timed("turn attributes", _call.turn_attributes)
    call._usage_metrics = timed("three histogram records (SDK)", call._usage_metrics)
    CompactionMetrics.record_turn = timed(  # type: ignore[method-assign]
        "token-fraction histogram record (SDK)", CompactionMetrics.record_turn
    )
    SdkSpan.set_attributes = timed("set_attributes (SDK)", SdkSpan.set_attributes)  # type: ignore[method-assign]
    call._end = timed("end the span (SDK)", call._end)


def main() -> None:
    """Time ``--calls`` calls at ``--length`` messages and print the stages."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument(
        "--count-calls",
        action="store_true",
        help="count the Python function calls per LLM call (ours, the OTel API and SDK) instead",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    overhead_clock.time = type("ThreadClock", (), {"perf_counter_ns": time.thread_time_ns})  # type: ignore[assignment]
    proc = worker.DroppingSpanProcessor()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(proc)
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    clock = overhead_clock.InnerClock()
    clock.install()
    config = BY_KEY["ours"]
    worker._instrument(config, "anthropic", tracer_provider, meter_provider)
    if not args.count_calls:
        install_timers()
    agent = worker.Agent(
        worker._make_call("anthropic", config, tracer_provider), anthropic_history, "s", clock
    )
    for _ in range(20):
        agent.step(args.length, False)
    gc.collect()
    gc.freeze()
    TOTALS.clear()
    own = []
    for _ in range(args.calls):
        if agent.left == 0:
            agent.start_conversation(args.length, False)
        messages = _next_messages(agent)
        ON[0] = True
        clock.inner_ns = 0
        start = time.thread_time_ns()
        if args.count_calls:
            sys.setprofile(_count_call)
        agent.call(messages, False)
        sys.setprofile(None)
        own.append(time.thread_time_ns() - start - clock.inner_ns)
        ON[0] = False
    if args.count_calls:
        print(f"ours, {args.length} messages, Python function calls per LLM call")
        for who, count in sorted(CALLS.items()):
            print(f"  {who:40s} {count / args.calls:7.1f}")
        return
    print(f"ours, {args.length} messages, {args.calls} calls, thread CPU time")
    print(f"  own time per call (median)             {statistics.median(own) / 1e3:7.1f} µs")
    for name, total in sorted(TOTALS.items(), key=lambda kv: -kv[1]):
        print(f"  {name:40s} {total / args.calls / 1e3:7.1f} µs")


def _next_messages(agent: worker.Agent) -> list[Any]:
    """The agent's step without its timing: two messages more on the same list."""
    n = len(agent.messages)
    agent.messages.extend(agent.full[n : n + 2])
    agent.left -= 1
    agent.calls += 1
    gc.collect()
    return agent.messages


if __name__ == "__main__":
    main()
