"""One generated run: its parameters, the instrumented SDK calls, and what the spans say.

:func:`execute` draws a run's parameters from its seed, instruments a fresh
``CompactionInstrumentor`` on in-memory exporters, lets the scenario drive its agents
through the real clients, and reads the spans back as an :class:`Observed`, with a
canonical form of every span for the determinism check (ids renamed in order of
appearance, times dropped).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from benchmarks.truth.agent import Agent
from benchmarks.truth.model import CallRecord, CompactionTruth, Observed, ObservedCompaction
from benchmarks.truth.text import STYLES, TextSource
from benchmarks.truth.wire import MODEL_ANTHROPIC, MODEL_OPENAI, WIRES, ToolSpec, Wire, make_wire
from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture, capture_telemetry
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, estimate_tokens

TOOLS = [
    ToolSpec("read_file", "Read a file of the repository."),
    ToolSpec("grep", "Search the repository for a pattern.", ("pattern",)),
    ToolSpec("list_files", "List a directory."),
    ToolSpec("think", "Write down a hypothesis.", ("note",)),
    ToolSpec("update_plan", "Update the plan.", ("plan",)),
    ToolSpec("edit_file", "Replace text in a file.", ("path", "old", "new")),
    ToolSpec("apply_patch", "Apply a unified diff.", ("patch",)),
    ToolSpec("run_tests", "Run the test suite.", ("selector",)),
]


@dataclass
class Run:
    """The parameters, agents and truth of one run; scenarios call :meth:`agent`.

    Args:
        rng: the run's generator (scenario choices); agents get their own from it.
        wire: the SDK call shape every agent of the run uses.
        reported_phases: agents report their phase before each call (else it is inferred).
        style: the summaries' style.
        window: the context window the settings give both models.
        trigger_fraction: the agents compact when the next request reaches this share.
    """

    rng: random.Random
    wire: Wire
    api: FakeLLMAPI
    reported_phases: bool
    style: str
    window: int
    trigger_fraction: float
    boundary_chance: float = 0.5
    truths: list[CompactionTruth] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    next_reply: Reply = field(default_factory=Reply)
    fail_next: bool = False
    last_server_call: dict[str, int] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def trigger_tokens(self) -> int:
        """The context size at which the agents compact."""
        return int(self.trigger_fraction * self.window)

    def agent_defaults(self, name: str = "a") -> dict[str, Any]:
        """A new agent's own system prompt, task, generators and output sizes."""
        text = TextSource(random.Random(self.rng.random()), name)
        return {
            "system": f"You are a coding agent ({text.words(3)}). " + text.words(80),
            "tools": TOOLS,
            "task": f"Task {name}: the test of {text.path()} fails; find why and fix it.",
            "replies": random.Random(self.rng.random()),
            "outputs": random.Random(self.rng.random()),
            "output_tokens": (120, 240),
        }

    def agent(self, name: str = "a", **options: Any) -> Agent:
        """A new agent of this run; keyword arguments override :meth:`agent_defaults`."""
        agent = Agent(self, name, **{**self.agent_defaults(name), **options})
        self.agents.append(agent)
        return agent

    def system_of(self, prefix_tokens: int) -> str:
        """A system prompt that, with the default tools, makes a prefix of ``prefix_tokens``."""
        text = TextSource(random.Random(self.rng.random()), "system")
        target = prefix_tokens - estimate_tokens(self.wire.tools(TOOLS))
        return "You are a coding agent with a long playbook.\n" + text.padding(target)

    def take_reply(self, request: RecordedRequest) -> Reply:
        """The fake API's script: the reply the calling agent prepared."""
        del request
        return self.next_reply


Scenario = Callable[[Run], None]

WIRE_WEIGHTS = {"anthropic": 2, "anthropic_stream": 2}
"""Anthropic runs are drawn twice as often: the openai SDK's request transform costs about
2-3 ms per history item (``openai._utils._transform``), so its runs cost 4-10 times more."""


def new_run(rng: random.Random, wires: tuple[str, ...]) -> Run:
    """A run with its shared parameters drawn from ``rng``."""
    holder: list[Run] = []
    api = FakeLLMAPI(script=lambda request: holder[0].take_reply(request))
    weights = [WIRE_WEIGHTS.get(w, 1) for w in wires]
    wire_name = rng.choices(wires, weights)[0]
    run = Run(
        rng=rng,
        wire=make_wire(wire_name, api),
        api=api,
        reported_phases=rng.random() < 0.5,
        style=rng.choice(STYLES),
        window=rng.choice((6_000, 8_000)),
        trigger_fraction=round(rng.uniform(0.72, 0.88), 3),
    )
    run.params = {
        "wire": wire_name,
        "phases": "reported" if run.reported_phases else "inferred",
        "style": run.style,
        "window": run.window,
        "trigger": run.trigger_fraction,
    }
    holder.append(run)
    return run


def execute(
    scenario: Scenario, seed: str, wires: tuple[str, ...] = tuple(WIRES)
) -> tuple[Run, Observed, str]:
    """Run ``scenario`` once with ``seed``: its run, what the spans say, and their digest."""
    with instrumented(scenario, seed, wires) as (run, cap):
        return run, observe(cap, run), span_digest(cap)


@contextmanager
def instrumented(
    scenario: Scenario, seed: str, wires: tuple[str, ...] = tuple(WIRES), *, content: bool = False
) -> Iterator[tuple[Run, Capture]]:
    """Run ``scenario`` once with ``seed`` under a fresh instrumentor: the run and the
    telemetry it produced, while the capture is open (``content``: message and summary
    content on the spans, as content capture records them)."""
    run = new_run(random.Random(seed), wires)
    with capture_telemetry() as cap:
        instrumentor = CompactionInstrumentor()
        instrumentor.instrument(
            tracer_provider=cap.tracer_provider,
            meter_provider=cap.meter_provider,
            settings=run_settings(run, content=content),
            on_finding=cap.on_finding,
        )
        try:
            scenario(run)
        finally:
            instrumentor.uninstrument()
        yield run, cap


SCHEMA_TEMPLATE = "pinned"
"""The generated agents' summarizers are given the five preserve-schema fields (the
``schema`` style is what they were asked for, ``partial`` and ``prose`` their failures;
``claude_code`` a real summarizer's template, which covers them): the user pinned them
(docs/detectors.md#summary_schema_coverage)."""


def run_settings(run: Run, *, content: bool = False) -> Settings:
    """The detector settings of a run: the defaults, with the run's window for both models
    and the schema pinned."""
    return Settings.model_validate(
        {
            "model_windows": model_windows(run),
            "capture_content": content,
            "schema_template": SCHEMA_TEMPLATE,
        }
    )


def model_windows(run: Run) -> dict[str, int]:
    """The run's context window for both models it may call."""
    return {MODEL_ANTHROPIC: run.window, MODEL_OPENAI: run.window}


def observe(cap: Capture, run: Run) -> Observed:
    """The calls' conversations and the compactions, with their findings, from the spans."""
    # A hindsight finding and a rediscovery measure carry a turn too.
    not_calls = (sc.SPAN_COMPACTION, sc.SPAN_FINDING, sc.SPAN_REDISCOVERY)
    calls = [s for s in cap.spans if s.name not in not_calls and _attr(s, sc.TURN_INDEX)]
    errors = []
    if len(calls) != len(run.calls):
        errors.append(f"{len(calls)} inference spans for {len(run.calls)} calls")
    by_span = {s.context.span_id: i for i, s in enumerate(calls)}
    conversations = tuple(str(_attr(s, sc.CONVERSATION_ID)) for s in calls)
    majority = _majority(conversations, run.calls)
    kinds: dict[str, set[str]] = {}
    for finding in cap.findings:
        kinds.setdefault(finding.compaction_id, set()).add(str(finding.kind))
    redone, baselines = _rediscovery(cap)
    found = []
    for span in cap.spans_named(sc.SPAN_COMPACTION):
        index = by_span.get(span.parent.span_id) if span.parent is not None else None
        agent = run.calls[index].agent if index is not None and index < len(run.calls) else None
        conversation = str(_attr(span, sc.CONVERSATION_ID))
        generation = _attr(span, sc.LINEAGE_GENERATION)
        after = _attr(span, sc.TOKENS_AFTER)
        cid = str(_attr(span, sc.COMPACTION_ID))
        found.append(
            ObservedCompaction(
                agent=agent or majority.get(conversation),
                turn=int(_attr(span, sc.TURN_INDEX) or 0),
                mode=str(_attr(span, sc.COMPACTION_MODE)),
                generation=None if generation is None else int(generation),
                tokens_after=None if after is None else int(after),
                compaction_id=cid,
                findings=frozenset(kinds.get(cid, ())),
                rediscovery=redone.get(cid),
            )
        )
    return Observed(tuple(found), conversations, tuple(errors), baselines)


def _rediscovery(cap: Capture) -> tuple[dict[str, tuple[int, int]], tuple[float, ...]]:
    """Each compaction's rediscovery (calls, tokens) from its span, and each conversation's
    baseline (the last its spans gave)."""
    redone: dict[str, tuple[int, int]] = {}
    baselines: dict[str, float] = {}
    for span in cap.spans_named(sc.SPAN_REDISCOVERY):
        cid = str(_attr(span, sc.COMPACTION_ID))
        redone[cid] = (
            int(_attr(span, sc.REDISCOVERY_CALLS)),
            int(_attr(span, sc.REDISCOVERY_TOKENS)),
        )
        base = _attr(span, sc.REDISCOVERY_BASELINE_TOKENS)
        if base is not None:
            baselines[str(_attr(span, sc.CONVERSATION_ID))] = float(base)
    return redone, tuple(baselines[k] for k in sorted(baselines))


def _attr(span: Any, key: str) -> Any:
    return (span.attributes or {}).get(key)


def _majority(conversations: tuple[str, ...], calls: list[CallRecord]) -> dict[str, str]:
    """Each conversation's most frequent agent (the first such agent on ties)."""
    counts: dict[str, Counter[str]] = {}
    for cid, call in zip(conversations, calls, strict=False):
        counts.setdefault(cid, Counter())[call.agent] += 1
    return {cid: c.most_common(1)[0][0] for cid, c in counts.items()}


_ID_KEYS = (
    sc.CONVERSATION_ID,
    sc.GEN_AI_CONVERSATION_ID,
    sc.COMPACTION_ID,
    sc.LINEAGE_PARENT_ID,
    sc.LINEAGE_ROOT_ID,
    sc.GEN_AI_RESPONSE_ID,
)


def canonical_spans(cap: Capture) -> list[dict[str, Any]]:
    """Every span without times, its ids renamed in order of first appearance."""
    names: dict[Any, str] = {}

    def rename(value: Any) -> str:
        return names.setdefault(value, f"id{len(names)}")

    out = []
    for span in cap.spans:
        attrs = dict(span.attributes or {})
        for key in _ID_KEYS:
            if key in attrs:
                attrs[key] = rename(("value", attrs[key]))
        out.append(
            {
                "name": span.name,
                "kind": span.kind.name,
                "span": rename(("span", span.context.span_id)),
                "trace": rename(("trace", span.context.trace_id)),
                "parent": None if span.parent is None else rename(("span", span.parent.span_id)),
                "attributes": {k: _plain(v) for k, v in sorted(attrs.items())},
                "events": [
                    [e.name, {k: _plain(v) for k, v in (e.attributes or {}).items()}]
                    for e in span.events
                ],
                "links": [rename(("span", link.context.span_id)) for link in span.links],
                "status": span.status.status_code.name,
            }
        )
    return out


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def span_digest(cap: Capture) -> str:
    """The SHA-256 of the canonical spans (equal digests: the same telemetry)."""
    text = json.dumps(canonical_spans(cap), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
