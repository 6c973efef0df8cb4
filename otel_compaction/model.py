"""The vocabulary every stage shares: turns, phases, pressure, compactions, findings.

Frozen dataclasses with slots, free of the OTel SDK and of the LLM SDKs, so the
same values flow from the instrumentation, the transcript importers and the
processor service into ``signals/``, ``lineage/`` and ``detectors/``.

The order of calls on a conversation is: ``report_phase`` whenever the agent
knows its phase; ``observe_compaction`` as soon as a compaction is known and
*before* ``observe_turn`` of the first call that sees the compacted context;
``observe_turn`` once per LLM call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind, PhaseSource


@dataclass(frozen=True, slots=True)
class PhaseReport:
    """A phase the agent reported about itself.

    ``distribution`` maps phase names to probabilities (normalised on use);
    ``confidence`` alone means the rest of the mass is spread evenly.
    """

    name: str
    confidence: float | None = None
    distribution: Mapping[str, float] | None = None


@dataclass(frozen=True, slots=True)
class PhaseEstimate:
    """The phase of a conversation after a turn, from either source.

    ``distribution`` is aligned with ``Settings.phases`` and sums to 1.
    ``known`` is False until the conversation has shown enough evidence for any
    phase (``Settings.phase_min_evidence_turns`` turns with tool calls, or a
    report): an unknown phase has no transition likelihood (0.0 here, absent on
    spans) and no rule judges it. ``transition_likelihood`` rises above the
    model's base rate only while a phase that was held with confidence is losing
    its probability (``docs/signals.md``).
    """

    name: str
    confidence: float
    entropy: float
    transition_likelihood: float
    source: PhaseSource
    distribution: tuple[float, ...]
    names: tuple[str, ...] = ()
    known: bool = True
    held_phase: str | None = None
    """The phase last held with confidence, the reference of ``transition_likelihood``."""
    held_turn: int = 0
    """The last turn ``held_phase`` was held (0 when there is none)."""


@dataclass(frozen=True, slots=True)
class PhaseTransition:
    """A change of the most likely phase, first seen on ``turn_index``."""

    from_phase: str
    to_phase: str
    turn_index: int
    transition_likelihood: float


@dataclass(frozen=True, slots=True)
class Pressure:
    """How full the context is: token fraction and recency-decayed tool output."""

    context_tokens: int
    window: int
    token_fraction: float
    attention_decay: float


@dataclass(frozen=True, slots=True)
class TurnObservation:
    """What the analysis needs to know of one LLM call (one turn).

    Args:
        context_tokens: tokens in the request context, cached ones included.
        model: the requested model, for the window table.
        new_content_tokens: task content new since the previous call (tool
            results and user text), the "new content" of a cycle
            (docs/concepts.md#re-expansion-livelock).
        tool_output_tokens: sizes of the tool outputs new in this call, oldest first.
        tool_calls: names of the tools the response asked to call (phase inference).
        window: the context window if the caller knows it (overrides the table).
        timestamp: seconds since the epoch, when known.
        tool_arguments: the arguments of each call in ``tool_calls`` (same order;
            JSON text or a command line, None when unknown), so a shell call that
            runs the tests counts as ``test`` (``signals.tools.categorize_tool``).
            Empty when unknown.
        tool_categories: the category of each call in ``tool_calls`` when it is
            already known (read back from a span that recorded it); used instead of
            classifying the names and arguments again. Empty when unknown.
        fixed_tokens: the system prompt and tool definitions of the request, in
            tokens, when known: the part of the context no compaction can reclaim.
        cache_read_tokens: the part of the context the provider read from its prompt
            cache, when the source says. On the first call after a compaction that
            rewrote the history, what still matched the cache is what came before the
            history (the system prompt and tool definitions): the analyzer takes it as
            the measured fixed part when ``fixed_tokens`` is unknown.
        tool_keys: the rediscovery key of each call in ``tool_calls`` as a span carries it
            (``lineage.rediscovery.key_text``), when the inputs are not at hand; an empty
            string for a call whose input was unknown. Empty when unknown.
    """

    context_tokens: int
    model: str | None = None
    new_content_tokens: int = 0
    tool_output_tokens: tuple[int, ...] = ()
    tool_calls: tuple[str, ...] = ()
    window: int | None = None
    timestamp: float | None = None
    tool_arguments: tuple[str | None, ...] = ()
    tool_categories: tuple[str, ...] = ()
    fixed_tokens: int | None = None
    cache_read_tokens: int | None = None
    tool_keys: tuple[str, ...] = ()

    @classmethod
    def of_anthropic_usage(
        cls,
        input_tokens: int | None,
        cache_read_tokens: int | None,
        cache_creation_tokens: int | None,
        **fields: Any,
    ) -> TurnObservation:
        """A call whose usage is Anthropic's, where the context is the sum of the three
        input figures (Claude Code's transcripts and its ``api_request`` events alike)."""
        context = (input_tokens or 0) + (cache_read_tokens or 0) + (cache_creation_tokens or 0)
        return cls(context_tokens=max(context, 0), cache_read_tokens=cache_read_tokens, **fields)


@dataclass(frozen=True, slots=True)
class SummarizerCost:
    """What the summarizer's own LLM calls cost a compaction (never turns).

    Claude Code makes the summary with a call of its own (``query_source="compact"``)
    just before it reports the compaction; that call's tokens, time and money are the
    compaction's cost, and the conversation's context is not in it.
    """

    calls: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float | None = None
    cost_usd: float | None = None

    def plus(self, other: SummarizerCost) -> SummarizerCost:
        """Both costs together (a summarizer that retried)."""
        return SummarizerCost(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            _sum(self.duration_s, other.duration_s),
            _sum(self.cost_usd, other.cost_usd),
        )


def _sum(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


@dataclass(frozen=True, slots=True)
class Rediscovery:
    """What one rediscovery horizon measured (``lineage.rediscovery``).

    Args:
        start_turn: the turn the horizon starts at (a compaction's turn, or a
            baseline point).
        compaction_id: the compaction it follows; None for a baseline point.
        calls: the repeated calls.
        tokens: the tokens of their results (those that could be paired).
        turns: how many turns made at least one of them.
        horizon_turns: the turns the horizon covered (``horizon`` unless cut
            short by the next compaction or the end of the conversation).
        tools: the tools whose repeated results cost the most tokens, most first.
    """

    start_turn: int
    compaction_id: str | None
    calls: int
    tokens: int
    turns: int
    horizon_turns: int
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RediscoveryBaseline:
    """The conversation's own rediscovery at its ordinary points, so far."""

    points: int = 0
    calls: int = 0
    tokens: int = 0

    @property
    def mean_tokens(self) -> float | None:
        """Mean tokens per baseline horizon; None before the first one closed."""
        return self.tokens / self.points if self.points else None

    @property
    def mean_calls(self) -> float | None:
        """Mean repeated calls per baseline horizon; None before the first one closed."""
        return self.calls / self.points if self.points else None

    def plus(self, result: Rediscovery) -> RediscoveryBaseline:
        """This baseline with one more closed horizon."""
        calls, tokens = self.calls + result.calls, self.tokens + result.tokens
        return RediscoveryBaseline(self.points + 1, calls, tokens)


@dataclass(frozen=True, slots=True)
class TurnAnalysis:
    """The signals of one turn, ready to become span attributes.

    ``settled`` is the compaction this turn settled: the first call after a
    compaction whose size after was not yet known measures it; the analysis holds
    the record with that size and the findings that needed it (only those).
    """

    conversation_id: str
    turn_index: int
    pressure: Pressure
    phase: PhaseEstimate
    transition: PhaseTransition | None = None
    compacted: bool = False
    tool_categories: tuple[str, ...] = ()
    settled: CompactionAnalysis | None = None
    rediscovered: tuple[Rediscovery, ...] = ()
    """The rediscovery horizons of earlier compactions that this turn closed."""


@dataclass(frozen=True, slots=True)
class CompactionObservation:
    """A compaction as it was observed, before lineage and detectors.

    Args:
        source: where it was seen (explicit call, provider response, inferred...).
        mode: lossy summary, extractive (verbatim tail kept), prune, or server-side.
        trigger: why it fired, free text (``auto``, ``manual``, ``input_tokens``...).
        tokens_before / tokens_after: context size just before, and just after as
            the source tells it (an estimate, or a transcript's own figure, which
            may be the summary's size: Claude Code's ``postTokens``).
        summary_tokens / retained_tail_tokens: sizes of the summary and of the
            part of the history kept verbatim.
        summary_text: the summary, when known (kept in memory only as a
            fingerprint and shingles, recorded on spans only if content capture is on).
        compacted_texts: texts of the messages that were compacted away; an
            earlier summary among them continues that summary's lineage.
        retained_texts: texts of the messages kept verbatim.
        parent_id: the parent compaction, when the source states it.
        continues_lineage: True/False when the source knows whether the
            compacted region held an earlier summary; None to infer it.
        failed: the summary step failed (e.g. Anthropic ``content: null``).
        compaction_id: an id given by the source; one is generated otherwise.
        turn_index: the turn of the first call that sees the compacted context;
            defaults to the next turn.
        context_after: the context of that first call, when it is already known
            (the instrumentation reads it from the call's usage); otherwise the
            analyzer takes it from the next turn it observes. This, not
            ``tokens_after``, is the size after the compaction.
        error: why the summary step failed, as the source names it
            (``too_few_groups``), when ``failed``.
        fixed_tokens: the fixed part of the context (system prompt, tool definitions)
            the compaction was judged against, as a compaction span carries it: a
            processor reading the span judges against the same part.
        compacted_tokens: the size of the compacted region as the source measured it
            (a compaction span carries the agent's), used when ``compacted_texts`` are
            not known; without either, it is ``tokens_before`` minus the retained tail.
        summarizer: the summarizer's own calls, when the source reports them apart;
            otherwise the analyzer attaches those it was told of since the last turn
            (``ConversationAnalyzer.observe_summarizer``).
    """

    source: CompactionSource
    mode: CompactionMode = CompactionMode.LOSSY
    trigger: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    summary_tokens: int | None = None
    retained_tail_tokens: int | None = None
    summary_text: str | None = None
    compacted_texts: tuple[str, ...] = ()
    retained_texts: tuple[str, ...] = ()
    parent_id: str | None = None
    continues_lineage: bool | None = None
    failed: bool = False
    compaction_id: str | None = None
    turn_index: int | None = None
    timestamp: float | None = None
    context_after: int | None = None
    error: str | None = None
    summarizer: SummarizerCost | None = None
    fixed_tokens: int | None = None
    compacted_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Cycle:
    """The cycle accounting between the previous compaction and this one."""

    interval_turns: int
    new_content_tokens: int
    net_growth_tokens: int
    residual_tokens: int

    @property
    def new_content_per_turn(self) -> float:
        """Average new task content per turn over the cycle."""
        return self.new_content_tokens / max(self.interval_turns, 1)


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """A compaction with its lineage and cycle, as the lineage tracker keeps it.

    ``tokens_after`` is the context of the first call that sees the compacted
    context (None until that call is known: the compaction is then *unsettled*);
    ``tokens_after_reported`` is the source's own figure, kept beside it.
    """

    compaction_id: str
    conversation_id: str
    turn_index: int
    source: CompactionSource
    mode: CompactionMode
    trigger: str | None
    tokens_before: int | None
    tokens_after: int | None
    summary_tokens: int | None
    retained_tail_tokens: int | None
    duplicated_tokens: int | None
    carried_over_tokens: int | None
    parent_id: str | None
    root_id: str
    generation: int
    cycle: Cycle | None
    token_fraction: float | None
    failed: bool = False
    summary_fingerprint: str | None = None
    schema_coverage: float | None = None
    missing_fields: tuple[str, ...] = ()
    timestamp: float | None = None
    # The context window the fractions were computed against, when known.
    window: int | None = None
    tokens_after_reported: int | None = None
    error: str | None = None
    lineage_assumed: bool = False
    """The parent was assumed (nothing known of the texts: summarize-then-truncate's
    default), not measured from the summary or stated by the source."""
    growth_per_turn: float | None = None
    """How much the context grew per turn in the cycle this compaction closed (None when
    unknown): what the tokens it reclaims are measured against, in turns."""
    summarizer: SummarizerCost | None = None
    """The summarizer's own calls: the compaction's cost, when the source reports it."""
    fixed_tokens: int | None = None
    """The fixed part of the context (system prompt, tool definitions) known when the
    compaction was settled, reported or measured (``TurnObservation.cache_read_tokens``)."""
    compacted_tokens: int | None = None
    """The size of the region the compaction replaced (None when unknown): what the
    rules call the history it summarized."""
    summary_template: str | None = None
    """The template the summary was judged against (``SummaryTemplateName``: a known
    summarizer's, ``pinned``, or ``unknown``: not judged); None without a summary text."""

    @property
    def settled(self) -> bool:
        """Whether the size after the compaction (the next call's context) is known."""
        return self.tokens_after is not None


@dataclass(frozen=True, slots=True)
class Finding:
    """What a detector found about one compaction.

    ``turn`` is the turn index at which the compaction happened; ``rule`` names
    the variant that decided (``veto``, ``ceiling``, ``cadence``, ``thrashing``,
    ``no_progress``...); ``reason`` is one sentence with the numbers.
    """

    kind: FindingKind
    conversation_id: str
    compaction_id: str
    turn: int
    reason: str
    rule: str = ""

    def to_json(self) -> dict[str, object]:
        """The finding as it appears in the JSON report (docs/analyze.md#the-report)."""
        return {
            "kind": self.kind.value,
            "conversation_id": self.conversation_id,
            "compaction_id": self.compaction_id,
            "turn": self.turn,
            "reason": self.reason,
            "rule": self.rule,
        }


@dataclass(frozen=True, slots=True)
class CompactionAnalysis:
    """A recorded compaction, the state it fired in, and what the detectors found."""

    record: CompactionRecord
    pressure: Pressure | None
    phase: PhaseEstimate | None
    findings: tuple[Finding, ...] = field(default=())
    settled: CompactionAnalysis | None = None
    """The previous compaction, judged again now: with its size after unknown when no
    call came between the two (its settlement, as ``TurnAnalysis.settled``), or, when
    it was settled already, by how soon this one followed it (``hindsight``)."""
    hindsight: bool = False
    """This analysis only adds findings to a compaction settled earlier (what the next
    compaction showed of it): its sizes were recorded at its settlement."""

    def flagged(self, kind: FindingKind) -> bool:
        """Whether a finding of ``kind`` was raised on this compaction."""
        return any(f.kind is kind for f in self.findings)

    def merged(self, settled: CompactionAnalysis) -> CompactionAnalysis:
        """This analysis completed by its settlement (``TurnAnalysis.settled``): the
        settled record, and the findings of both steps."""
        return CompactionAnalysis(
            settled.record, self.pressure, self.phase, (*self.findings, *settled.findings)
        )
