"""One configuration, one process: instrument, verify the spans, time the calls, write JSON.

Run by ``overhead/run.py`` as ``python overhead/worker.py SPEC.json OUT.json``, one
process per configuration per pass, so no instrumentation needs to uninstrument cleanly and no
import-time patch leaks into another configuration.

Each timed call is the step of an agent (``Agent``): the ``messages`` list the previous call
sent, with one (assistant ``tool_use``, user ``tool_result``) pair appended, so two messages
are new; a conversation (with its own tagged content) serves ``length / 20 + 1`` steps, so
timed calls send ``length`` to ``1.1 × length`` messages.
"""

from __future__ import annotations

import cProfile
import gc
import importlib
import json
import logging
import random
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

import otel_compaction
from benchmarks.overhead.clock import InnerClock
from benchmarks.overhead.configs import BY_KEY, Config
from benchmarks.overhead.first import run_first_cell
from benchmarks.overhead.history import (
    MODEL_ANTHROPIC,
    MODEL_OPENAI,
    SYSTEM_PROMPT,
    Message,
    anthropic_history,
    anthropic_tools,
    canned_handler,
    openai_history,
    openai_tools,
)
from otel_compaction import semconv

Call = Callable[[list[Message], bool], int]


class DroppingSpanProcessor(SpanProcessor):
    """Counts ended spans and drops them; keeps them only while ``capture`` is set.

    The same processor for every configuration: what is measured is the instrumentation and
    the SDK's span machinery, not an exporter.
    """

    def __init__(self) -> None:
        self.ended = 0
        self.capture = False
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Count the span, and keep it during a verification call."""
        self.ended += 1
        if self.capture:
            self.spans.append(span)


class _LogCounter(logging.Handler):
    """Counts the warnings the instrumentation logs during the verification call."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        """Count, print nothing."""
        self.count += 1


def instrument(
    config: Config, provider: str, tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> str | None:
    """Instrument ``provider`` for ``config``; the instrumentor's version, or None if none."""
    target = config.instrumentors.get(provider)
    if target is None:
        return None
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(module_name)
    instrumentor = getattr(module, class_name)()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return str(getattr(module, "__version__", "") or "")


def make_call(provider: str, config: Config, tracer_provider: TracerProvider) -> Call:
    """A function making one chat call of ``provider`` through the canned transport."""
    http_client = httpx2.Client(transport=httpx2.MockTransport(canned_handler(provider)))
    if provider == "anthropic":
        import anthropic

        otel: Any = {"tracer_provider": tracer_provider} if config.sdk_span else False
        client = anthropic.Anthropic(
            api_key="bench", http_client=http_client, max_retries=0, open_telemetry=otel
        )
        tools = anthropic_tools()

        def call_anthropic(messages: list[Message], stream: bool) -> int:
            kwargs: dict[str, Any] = {"model": MODEL_ANTHROPIC, "max_tokens": 4096}
            kwargs.update(system=SYSTEM_PROMPT, tools=tools, messages=messages)
            if not stream:
                client.messages.create(**kwargs)
                return 1
            return sum(1 for _ in client.messages.create(**kwargs, stream=True))

        return call_anthropic

    import openai

    oai = openai.OpenAI(api_key="bench", http_client=http_client, max_retries=0)
    oai_tools = openai_tools()

    def call_openai(messages: list[Message], stream: bool) -> int:
        kwargs: dict[str, Any] = {"model": MODEL_OPENAI, "tools": oai_tools, "messages": messages}
        if not stream:
            oai.chat.completions.create(**kwargs)
            return 1
        kwargs.update(stream=True, stream_options={"include_usage": True})
        return sum(1 for _ in oai.chat.completions.create(**kwargs))

    return call_openai


Providers = tuple[DroppingSpanProcessor, TracerProvider, InMemoryMetricReader, MeterProvider]


def providers() -> Providers:
    """The same SDK providers for every configuration, made global (the client's own span and
    some instrumentations find theirs there): a counting, dropping span processor and an
    in-memory metric reader that is never collected during timing."""
    proc = DroppingSpanProcessor()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(proc)
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    return proc, tracer_provider, reader, meter_provider


def _span_summary(span: ReadableSpan) -> dict[str, Any]:
    attributes = dict(span.attributes or {})
    size = sum(len(k) + len(str(v)) for k, v in attributes.items())
    summary = {
        "name": span.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else "",
        "kind": span.kind.name,
        "attributes": len(attributes),
        "keys": sorted(attributes),
        "attribute_bytes": size,
        "events": len(span.events),
        "links": len(span.links),
    }
    # Ours numbers the turns of a conversation: 2 shows the timed call continued the
    # conversation of the untimed one, i.e. the incremental path was measured.
    if (turn := attributes.get(semconv.TURN_INDEX)) is not None:
        summary["turn_index"] = turn
    return summary


class Agent:
    """Calls as an agent makes them: one ``messages`` list, one pair appended per step.

    A conversation starts with an untimed call of ``length - 2`` messages; each step appends an
    (assistant ``tool_use``, user ``tool_result``) pair to the same list and makes the timed
    call. After ``length // 20 + 1`` steps (the history grown by 10 %) a new conversation
    starts, so timed calls send ``length`` to ``1.1 * length`` messages, two of them new.
    """

    def __init__(
        self,
        call: Call,
        make: Callable[[str, int], list[Message]],
        prefix: str,
        clock: InnerClock | None,
    ) -> None:
        self.call, self.make, self.prefix, self.clock = call, make, prefix, clock
        self.conversations = self.calls = self.left = 0
        self.full: list[Message] = []
        self.messages: list[Message] = []
        self.profiler: cProfile.Profile | None = None

    def step(self, length: int, stream: bool) -> tuple[int, int, int]:
        """One step; the timed call's wall, CPU and inside-the-SDK times in ns.

        CPU time (the process's, all threads) is what the call costs; wall time also counts
        waiting for a core, which on a shared machine is mostly other people's work. The
        collection before the timed call gives every call the same collector state, so a
        collection inside the call is due to the call's own allocations.
        """
        self.next_messages(length, stream)
        if self.clock:
            self.clock.inner_ns = 0
        if self.profiler:
            self.profiler.enable()
        wall, cpu = time.perf_counter_ns(), time.process_time_ns()
        self.call(self.messages, stream)
        wall, cpu = time.perf_counter_ns() - wall, time.process_time_ns() - cpu
        if self.profiler:
            self.profiler.disable()
        return wall, cpu, self.clock.inner_ns if self.clock else 0

    def next_messages(self, length: int, stream: bool) -> list[Message]:
        """The next step's ``messages``: two more on the same list (a new conversation, with
        its untimed first call, when this one has served its steps), the collector run."""
        if self.left == 0:
            self.start_conversation(length, stream)
        n = len(self.messages)
        self.messages.extend(self.full[n : n + 2])
        self.left -= 1
        self.calls += 1
        gc.collect()
        return self.messages

    def start_conversation(self, length: int, stream: bool) -> None:
        """A new conversation, and its first call (untimed)."""
        steps = length // 20 + 1
        self.conversations += 1
        self.full = self.make(f"{self.prefix}-{self.conversations}", length + 2 * (steps - 1))
        self.messages = self.full[: length - 2]
        self.call(self.messages, stream)
        self.calls += 1
        self.left = steps


def _verify(agent: Agent, length: int, stream: bool, proc: DroppingSpanProcessor) -> dict[str, Any]:
    """One step with its timed call's spans kept and its logged warnings counted."""
    if agent.left == 0:
        agent.start_conversation(length, stream)  # its first call is not the one verified
    proc.spans.clear()
    counter = _LogCounter()
    logging.getLogger().addHandler(counter)
    proc.capture = True
    try:
        agent.step(length, stream)
    finally:
        proc.capture = False
        logging.getLogger().removeHandler(counter)
    verify = [_span_summary(s) for s in proc.spans]
    proc.spans.clear()
    return {"verify": verify, "log_records": counter.count}


def _run_cell(
    spec: dict[str, Any], cell: dict[str, Any], call: Call, proc: DroppingSpanProcessor
) -> dict[str, Any]:
    """Warm up, verify one call's spans, then time ``cell["calls"]`` calls."""
    make = anthropic_history if spec["provider"] == "anthropic" else openai_history
    stream, length = bool(cell["stream"]), int(cell["length"])
    agent = Agent(call, make, f"p{spec['pass']}{'s' if stream else 'n'}{length}", spec.get("clock"))
    began = time.monotonic()
    for _ in range(cell["warmup"]):
        agent.step(length, stream)
    out: dict[str, Any] = {"stream": stream, "length": length}
    out.update(_verify(agent, length, stream, proc))
    # What exists now (modules, the instrumentation's set-up and state, earlier cells) is not
    # what a call costs: keep it out of the collector's work, as long-running services do.
    gc.collect()
    gc.freeze()
    agent.profiler = spec.get("profiler")
    ended_before, calls_before = proc.ended, agent.calls
    times = [agent.step(length, stream) for _ in range(cell["calls"])]
    out["times_ns"] = [wall for wall, _, _ in times]
    out["cpu_ns"] = [cpu for _, cpu, _ in times]
    if agent.clock:
        out["inner_ns"] = [inner for _, _, inner in times]
    out["spans_per_call"] = (proc.ended - ended_before) / max(1, agent.calls - calls_before)
    out["max_length"] = len(agent.messages)
    out["cell_wall_s"] = time.monotonic() - began
    return out


def _metric_totals(reader: InMemoryMetricReader) -> dict[str, float]:
    """Each metric recorded during the run: its summed value, or count for histograms."""
    data = reader.get_metrics_data()
    totals: dict[str, float] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points = list(metric.data.data_points)
                value = sum(float(getattr(p, "value", getattr(p, "count", 0))) for p in points)
                totals[metric.name] = totals.get(metric.name, 0.0) + value
    return totals


def _first_cell(
    spec: dict[str, Any], cell: dict[str, Any], call: Call, proc: DroppingSpanProcessor
) -> dict[str, Any]:
    """A first-call cell (``benchmarks.overhead.first``), its first timed call's spans kept."""

    def capture(on: bool) -> list[dict[str, Any]]:
        proc.capture = on
        kept = [] if on else [_span_summary(s) for s in proc.spans]
        proc.spans.clear()
        return kept

    prefix = f"p{spec['pass']}first{cell['length']}"
    return run_first_cell(cell, call, anthropic_history, prefix, spec.get("clock"), capture)


def _run_cell_safely(
    spec: dict[str, Any], cell: dict[str, Any], call: Call, proc: DroppingSpanProcessor
) -> dict[str, Any]:
    try:
        if cell.get("first"):
            return _first_cell(spec, cell, call, proc)
        return _run_cell(spec, cell, call, proc)
    except Exception as exc:  # noqa: BLE001 - an instrumentation crashing the call is reported
        failed = {"stream": cell["stream"], "length": cell["length"]}
        failed["error"] = f"{type(exc).__name__}: {exc}"
        failed["traceback"] = traceback.format_exc(limit=8)
        return failed


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run every cell of ``spec`` for its configuration; never raises."""
    config = BY_KEY[spec["config"]]
    result: dict[str, Any] = {
        "config": config.key,
        "provider": spec["provider"],
        "pass": spec["pass"],
        # Where ours came from: an A/B of two checkouts (overhead/ab.py) checks it.
        "package_path": str(Path(otel_compaction.__file__).resolve().parent),
    }
    proc, tracer_provider, reader, meter_provider = providers()
    clock = InnerClock() if spec["provider"] == "anthropic" else None
    try:
        if clock:
            clock.install()
        result["instrumentor_version"] = instrument(
            config, spec["provider"], tracer_provider, meter_provider
        )
        call = make_call(spec["provider"], config, tracer_provider)
    except Exception as exc:  # noqa: BLE001 - a competitor that fails to load is a finding, not a crash
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=6)
        return result
    gc.collect()
    gc.freeze()
    cells = list(spec["cells"])
    random.Random(spec["seed"]).shuffle(cells)
    profiler = cProfile.Profile() if spec.get("profile_path") else None
    extras = {"profiler": profiler, "clock": clock}
    result["cells"] = [_run_cell_safely({**spec, **extras}, c, call, proc) for c in cells]
    if profiler:
        profiler.dump_stats(spec["profile_path"])
    result["metrics"] = _metric_totals(reader)
    return result


def main(argv: list[str]) -> int:
    """Entry point: read the spec, run it, write the result."""
    warnings.simplefilter("ignore")  # deprecation chatter from the SDKs is not what we measure
    spec = json.loads(Path(argv[1]).read_text())
    result = run(spec)
    Path(argv[2]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
