"""Realistic conversations rendered as the in-process instrumentation would export them.

Each scenario is a list of steps (turns and compactions). ``render`` runs the
real engine in process, exactly as the instrumentation does, and records one
span per step through the OTel SDK with the attributes of ``emit.attributes``,
with fixed ids and timestamps so the OTLP/JSON written from it is stable. It
returns the spans and the findings the in-process engine raised: the oracle
the processor's verdicts are compared with.

The scenarios follow the incidents of docs/concepts.md: ``boundary_000`` is the boundary
incident's 40-turn
debugging run with a lossy compaction at turn 30 while the phase straddles
hypothesize and patch; ``livelock_004`` is the livelock incident's accelerating cadence under
flat new content; ``healthy`` compacts four times at a steady cadence and once
(at turn 34) when the phase has settled.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, set_span_in_context
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.emit.attributes import compaction_attributes, turn_attributes
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.model import (
    CompactionObservation,
    Finding,
    PhaseReport,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource

MODEL = "claude-sonnet-4-5"
BASE_NS = 1_794_528_000_000_000_000  # 2026-11-12T00:00:00Z
TURN_NS = 10_000_000_000


@dataclass(frozen=True)
class TurnStep:
    """One LLM call."""

    context_tokens: int
    new_content_tokens: int
    tool_calls: tuple[str, ...] = ()
    tool_output_tokens: tuple[int, ...] = ()
    report: PhaseReport | None = None


@dataclass(frozen=True)
class CompactionStep:
    """One compaction, before the call that sees its result."""

    tokens_before: int
    tokens_after: int
    mode: CompactionMode = CompactionMode.LOSSY
    continues: bool = False
    report: PhaseReport | None = None


Step = TurnStep | CompactionStep


@dataclass
class Rendered:
    """The spans of a conversation and the findings the in-process engine raised."""

    conversation_id: str
    spans: list[ReadableSpan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class _SeededIds(IdGenerator):
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def _tools(phase: str) -> tuple[str, ...]:
    return {
        "explore": ("read_file", "grep"),
        "hypothesize": ("read_file",),
        "patch": ("edit_file",),
        "verify": ("run_tests",),
    }[phase]


def boundary_000() -> list[Step]:
    """The boundary incident: compaction at turn 30 at 71% pressure while the phase straddles."""
    steps: list[Step] = []
    for turn in range(1, 41):
        tokens = 15_000 + turn * 4_400 if turn < 30 else 48_000 + (turn - 30) * 3_000
        phase = "explore" if turn <= 12 else "hypothesize" if turn <= 29 else "patch"
        report = None
        if turn == 28:
            report = PhaseReport("hypothesize", distribution=_dist(h=0.81, p=0.12, e=0.05))
        if turn == 31:
            report = PhaseReport("patch", distribution=_dist(h=0.30, p=0.63, e=0.03))
        if turn == 30:
            straddle = PhaseReport("hypothesize", distribution=_dist(h=0.48, p=0.44, e=0.04))
            steps.append(CompactionStep(143_400, 46_000, report=straddle))
        steps.append(TurnStep(tokens, 3_100, _tools(phase), (1_800,) * len(_tools(phase)), report))
    return steps


def _dist(h: float, p: float, e: float) -> dict[str, float]:
    return {"hypothesize": h, "patch": p, "explore": e, "verify": round(1 - h - p - e, 4)}


def livelock_004() -> list[Step]:
    """The livelock incident: summaries of summaries; each cycle buys fewer turns at flat load."""
    steps: list[Step] = []
    context, turn = 20_000, 0
    intervals = (21, 9, 9, 9, 7, 5, 3, 2, 2)
    for index, interval in enumerate(intervals):
        for _ in range(interval):
            turn += 1
            context += 6_100 + (turn % 3) * 50
            steps.append(TurnStep(context, 6_100 + (turn % 3) * 50, ("read_file",), (3_000,)))
        after = 60_000 + 8_100 * index
        steps.append(CompactionStep(context, after, continues=index > 0))
        context = after
    for _ in range(2):
        context += 6_100
        steps.append(TurnStep(context, 6_100, ("read_file",), (3_000,)))
    return steps


def healthy() -> list[Step]:
    """Steady cadence (11, 10, 12 turns), fresh lineages, settled phases: no finding."""
    steps: list[Step] = []
    context = 30_000
    compact_at = {21, 32, 42, 54}
    for turn in range(1, 61):
        if turn in compact_at:
            settled = PhaseReport("patch", distribution=_dist(h=0.06, p=0.88, e=0.03))
            steps.append(CompactionStep(context, 30_000, report=settled))
            context = 30_000
        context += 6_000
        phase = "explore" if turn <= 10 else "patch" if turn <= 40 else "verify"
        steps.append(TurnStep(context, 6_000, _tools(phase), (2_000,)))
    return steps


SCENARIOS = {"boundary_000": boundary_000, "livelock_004": livelock_004, "healthy": healthy}


def render(
    name: str, steps: Sequence[Step], seed: int, settings: Settings | None = None
) -> Rendered:
    """Run ``steps`` through the in-process engine and record their spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        id_generator=_SeededIds(seed), resource=Resource({SERVICE_NAME: "demo-agent"})
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("otel_compaction")
    conversation = f"conv-{name}"
    analyzer = ConversationAnalyzer(conversation, settings or Settings())
    out = Rendered(conversation)
    root = tracer.start_span(
        f"{sc.OPERATION_INVOKE_AGENT} demo",
        start_time=BASE_NS,
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT},
    )
    context = set_span_in_context(root)
    t = BASE_NS
    for index, step in enumerate(steps):
        t += TURN_NS
        if isinstance(step, CompactionStep):
            # The instrumentation sees a compaction with the first call after it, whose
            # context (from that call's usage) is the size after.
            following = steps[index + 1] if index + 1 < len(steps) else None
            after = following.context_tokens if isinstance(following, TurnStep) else None
            attrs = _compaction(analyzer, step, after, out)
            name_ = sc.SPAN_COMPACTION
            kind = SpanKind.INTERNAL
        else:
            attrs = _turn(analyzer, step)
            name_ = f"{sc.OPERATION_CHAT} {MODEL}"
            kind = SpanKind.CLIENT
        span = tracer.start_span(name_, context, kind, attrs, start_time=t)
        span.end(end_time=t + TURN_NS // 2)
    root.end(end_time=t + TURN_NS)
    out.spans = list(exporter.get_finished_spans())
    return out


def _compaction(
    analyzer: ConversationAnalyzer, step: CompactionStep, after: int | None, out: Rendered
) -> dict[str, AttributeValue]:
    if step.report is not None:
        analyzer.report_phase(step.report)
    parent = analyzer.compactions[-1].compaction_id if step.continues else None
    index = len(analyzer.compactions) + 1
    analysis = analyzer.observe_compaction(
        CompactionObservation(
            source=CompactionSource.EXPLICIT,
            mode=step.mode,
            trigger="auto",
            tokens_before=step.tokens_before,
            tokens_after=step.tokens_after,
            parent_id=parent,
            continues_lineage=step.continues,
            compaction_id=f"{analyzer.conversation_id}-c{index}",
            context_after=after,
        )
    )
    out.findings.extend(analysis.findings)
    attrs = compaction_attributes(analysis)
    attrs.update(_reported(step.report))
    return attrs


def _turn(analyzer: ConversationAnalyzer, step: TurnStep) -> dict[str, AttributeValue]:
    if step.report is not None:
        analyzer.report_phase(step.report)
    obs = TurnObservation(
        context_tokens=step.context_tokens,
        model=MODEL,
        new_content_tokens=step.new_content_tokens,
        tool_output_tokens=step.tool_output_tokens,
        tool_calls=step.tool_calls,
    )
    analysis = analyzer.observe_turn(obs)
    attrs = turn_attributes(analysis, obs)
    attrs.update(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_ANTHROPIC,
            sc.GEN_AI_REQUEST_MODEL: MODEL,
            sc.GEN_AI_USAGE_INPUT_TOKENS: step.context_tokens,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 400,
        }
    )
    if step.tool_output_tokens:
        attrs[sc.TOOL_OUTPUT_TOKENS] = list(step.tool_output_tokens)
    attrs.update(_reported(step.report))
    return attrs


def _reported(report: PhaseReport | None) -> dict[str, AttributeValue]:
    """The reported distribution, as the processor reads it (names and values aligned)."""
    if report is None or not report.distribution:
        return {}
    names = sorted(report.distribution)
    return {
        sc.PHASE_NAMES: names,
        sc.PHASE_DISTRIBUTION: [float(report.distribution[n]) for n in names],
    }
