"""Span and event attributes for turns, compactions, phase transitions and findings.

Plain dictionaries of OTel attribute values, built only from names in
``semconv``. Floats are rounded to four decimals: enough for any threshold,
and it keeps span payloads small and diffs of golden files readable.
"""

from __future__ import annotations

from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionRecord,
    Finding,
    PhaseEstimate,
    PhaseTransition,
    Pressure,
    Rediscovery,
    RediscoveryBaseline,
    SummarizerCost,
    TurnAnalysis,
    TurnObservation,
)
from otel_compaction.semconv import PhaseSource

Attributes = dict[str, AttributeValue]


def _r(value: float) -> float:
    return round(float(value), 4)


def _pressure(pressure: Pressure, out: Attributes) -> None:
    out[sc.CONTEXT_TOKENS] = int(pressure.context_tokens)
    out[sc.CONTEXT_WINDOW] = int(pressure.window)
    out[sc.PRESSURE_TOKEN_FRACTION] = _r(pressure.token_fraction)
    out[sc.PRESSURE_ATTENTION_DECAY] = _r(pressure.attention_decay)


def _phase(phase: PhaseEstimate, out: Attributes) -> None:
    if not phase.known:
        # Too little evidence yet: no phase, no confidence, no transition likelihood.
        out[sc.PHASE_NAME] = sc.PHASE_UNKNOWN
        out[sc.PHASE_SOURCE] = phase.source.value
        return
    out[sc.PHASE_NAME] = phase.name
    out[sc.PHASE_CONFIDENCE] = _r(phase.confidence)
    out[sc.PHASE_ENTROPY] = _r(phase.entropy)
    out[sc.PHASE_TRANSITION_LIKELIHOOD] = _r(phase.transition_likelihood)
    out[sc.PHASE_SOURCE] = phase.source.value
    if phase.source is PhaseSource.REPORTED and phase.names:
        # The whole reported belief, so the processor repeats the same likelihood.
        out[sc.PHASE_NAMES] = list(phase.names)
        out[sc.PHASE_DISTRIBUTION] = [_r(p) for p in phase.distribution]


def turn_attributes(
    analysis: TurnAnalysis, observation: TurnObservation | None = None
) -> Attributes:
    """The ``compaction.*`` attributes of an inference span.

    ``observation`` adds the raw inputs (new content, tool calls) that let the
    processor recompute every verdict from the span alone.
    """
    # Built in one literal (once per LLM call): the same keys, order and values as
    # ``_pressure`` and ``_phase`` give, without their calls.
    pressure, phase = analysis.pressure, analysis.phase
    source = phase.source
    if not phase.known:
        return _unknown_phase_turn(analysis, observation)
    out: Attributes = {
        sc.CONVERSATION_ID: analysis.conversation_id,
        sc.TURN_INDEX: analysis.turn_index,
        sc.CONTEXT_TOKENS: int(pressure.context_tokens),
        sc.CONTEXT_WINDOW: int(pressure.window),
        sc.PRESSURE_TOKEN_FRACTION: round(float(pressure.token_fraction), 4),
        sc.PRESSURE_ATTENTION_DECAY: round(float(pressure.attention_decay), 4),
        sc.PHASE_NAME: phase.name,
        sc.PHASE_CONFIDENCE: round(float(phase.confidence), 4),
        sc.PHASE_ENTROPY: round(float(phase.entropy), 4),
        sc.PHASE_TRANSITION_LIKELIHOOD: round(float(phase.transition_likelihood), 4),
        sc.PHASE_SOURCE: _SOURCE_VALUES.get(source) or source.value,
    }
    if source is PhaseSource.REPORTED and phase.names:
        out[sc.PHASE_NAMES] = list(phase.names)
        out[sc.PHASE_DISTRIBUTION] = [_r(p) for p in phase.distribution]
    _turn_extras(analysis, observation, out)
    return out


def _unknown_phase_turn(analysis: TurnAnalysis, observation: TurnObservation | None) -> Attributes:
    """:func:`turn_attributes` of a turn whose phase is not known yet."""
    pressure = analysis.pressure
    out: Attributes = {
        sc.CONVERSATION_ID: analysis.conversation_id,
        sc.TURN_INDEX: analysis.turn_index,
    }
    _pressure(pressure, out)
    _phase(analysis.phase, out)
    _turn_extras(analysis, observation, out)
    return out


def _turn_extras(
    analysis: TurnAnalysis, observation: TurnObservation | None, out: Attributes
) -> None:
    if analysis.compacted:
        # The conventions say: set it true on the first span after a compaction, never false.
        out[sc.GEN_AI_CONVERSATION_COMPACTED] = True
    if analysis.tool_categories:
        out[sc.TOOL_CATEGORIES] = list(analysis.tool_categories)
    if observation is not None:
        out[sc.CONTEXT_NEW_CONTENT_TOKENS] = int(observation.new_content_tokens)
        if observation.tool_calls:
            out[sc.TOOL_CALLS] = list(observation.tool_calls)
        if observation.tool_keys:
            out[sc.TOOL_CALL_KEYS] = list(observation.tool_keys)
        if observation.tool_output_tokens:
            out[sc.TOOL_OUTPUT_TOKENS] = [int(n) for n in observation.tool_output_tokens]
        if observation.fixed_tokens is not None:
            out[sc.CONTEXT_FIXED_TOKENS] = int(observation.fixed_tokens)


# ``Enum.value`` is a descriptor call; the values of the few sources, looked up instead.
_SOURCE_VALUES = {source: source.value for source in PhaseSource}


def transition_event_attributes(transition: PhaseTransition) -> Attributes:
    """The attributes of the ``compaction.phase.transition`` span event."""
    return {
        sc.PHASE_FROM: transition.from_phase,
        sc.PHASE_TO: transition.to_phase,
        sc.PHASE_TRANSITION_LIKELIHOOD: _r(transition.transition_likelihood),
        sc.TURN_INDEX: transition.turn_index,
    }


def compaction_attributes(analysis: CompactionAnalysis) -> Attributes:
    """The attributes of a ``compaction`` span: sizes, lineage, cycle, state, flags."""
    rec = analysis.record
    out: Attributes = {
        sc.CONVERSATION_ID: rec.conversation_id,
        sc.TURN_INDEX: rec.turn_index,
        sc.COMPACTION_ID: rec.compaction_id,
        sc.COMPACTION_SOURCE: rec.source.value,
        sc.COMPACTION_MODE: rec.mode.value,
        sc.LINEAGE_ROOT_ID: rec.root_id,
        sc.LINEAGE_GENERATION: rec.generation,
    }
    optional: dict[str, AttributeValue | None] = {
        sc.COMPACTION_TRIGGER: rec.trigger,
        sc.TOKENS_BEFORE: rec.tokens_before,
        sc.TOKENS_AFTER: rec.tokens_after,
        sc.TOKENS_AFTER_REPORTED: rec.tokens_after_reported,
        sc.TOKENS_SUMMARY: rec.summary_tokens,
        sc.TOKENS_RETAINED_TAIL: rec.retained_tail_tokens,
        sc.TOKENS_COMPACTED: rec.compacted_tokens,
        sc.TOKENS_DUPLICATED: rec.duplicated_tokens,
        sc.TOKENS_CARRIED_OVER: rec.carried_over_tokens,
        sc.LINEAGE_PARENT_ID: rec.parent_id,
        sc.SUMMARY_FINGERPRINT: rec.summary_fingerprint,
        sc.TOKEN_FRACTION_AT_COMPACTION: (
            None if rec.token_fraction is None else _r(rec.token_fraction)
        ),
        sc.SUMMARY_SCHEMA_COVERAGE: (
            None if rec.schema_coverage is None else _r(rec.schema_coverage)
        ),
        sc.SUMMARY_TEMPLATE: rec.summary_template,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if rec.missing_fields:
        out[sc.SUMMARY_MISSING_FIELDS] = list(rec.missing_fields)
    if rec.lineage_assumed:
        out[sc.LINEAGE_ASSUMED] = True
    if rec.failed:
        out[sc.SUMMARY_FAILED] = True
        if rec.error:
            out[sc.SUMMARY_ERROR] = rec.error
    if rec.summarizer is not None:
        _summarizer(rec.summarizer, out)
    if rec.fixed_tokens is not None:
        out[sc.CONTEXT_FIXED_TOKENS] = rec.fixed_tokens
    if rec.cycle is not None:
        out[sc.CYCLE_INTERVAL_TURNS] = rec.cycle.interval_turns
        out[sc.CYCLE_NEW_CONTENT_TOKENS] = rec.cycle.new_content_tokens
        out[sc.CYCLE_NET_GROWTH_TOKENS] = rec.cycle.net_growth_tokens
        out[sc.CYCLE_RESIDUAL_TOKENS] = rec.cycle.residual_tokens
    if analysis.pressure is not None:
        out[sc.PRESSURE_TOKEN_FRACTION] = _r(analysis.pressure.token_fraction)
        out[sc.PRESSURE_ATTENTION_DECAY] = _r(analysis.pressure.attention_decay)
        out[sc.CONTEXT_WINDOW] = int(analysis.pressure.window)
    if analysis.phase is not None:
        _phase(analysis.phase, out)
    out.update(flag_attributes(analysis.findings))
    return out


def _summarizer(cost: SummarizerCost, out: Attributes) -> None:
    out[sc.SUMMARIZER_CALLS] = cost.calls
    out[sc.SUMMARIZER_INPUT_TOKENS] = cost.input_tokens
    out[sc.SUMMARIZER_OUTPUT_TOKENS] = cost.output_tokens
    if cost.duration_s is not None:
        out[sc.SUMMARIZER_DURATION] = _r(cost.duration_s)
    if cost.cost_usd is not None:
        out[sc.SUMMARIZER_COST_USD] = round(float(cost.cost_usd), 6)


def compaction_status(record: CompactionRecord) -> Status | None:
    """The status of a ``compaction`` span: ERROR, with the error the source names, when its
    summary step failed (the context was kept: counted, not a lost task); None otherwise."""
    if not record.failed:
        return None
    return Status(StatusCode.ERROR, record.error or "summary step failed")


def flag_attributes(findings: tuple[Finding, ...]) -> Attributes:
    """``compaction.flag.*`` set true for each kind found, and the reasons.

    One finding's reason is written as it is; several are one per line, each
    led by its kind (``boundary_compaction: ...``), so a person reads them apart.
    """
    out: Attributes = {}
    for finding in findings:
        out[sc.FLAG_BY_KIND[finding.kind]] = True
    if findings:
        out[sc.FLAG_REASON] = joined_reasons(findings)
    return out


def joined_reasons(findings: tuple[Finding, ...]) -> str:
    """The reasons of ``findings`` as ``compaction.flag.reason`` holds them."""
    if len(findings) == 1:
        return findings[0].reason
    return "\n".join(f"{f.kind.value}: {f.reason}" for f in findings)


def finding_attributes(finding: Finding) -> Attributes:
    """The attributes of a ``compaction.finding`` span (the processor's tap output)."""
    return {
        sc.FINDING_KIND: finding.kind.value,
        sc.FINDING_RULE: finding.rule,
        sc.FLAG_REASON: finding.reason,
        sc.CONVERSATION_ID: finding.conversation_id,
        sc.COMPACTION_ID: finding.compaction_id,
        sc.TURN_INDEX: finding.turn,
        sc.FLAG_BY_KIND[finding.kind]: True,
    }


def rediscovery_attributes(
    conversation_id: str, result: Rediscovery, baseline: RediscoveryBaseline | None
) -> Attributes:
    """The attributes of a ``compaction.rediscovery`` span: what the compaction's horizon
    measured, and the conversation's baseline when one is known."""
    out: Attributes = {
        sc.CONVERSATION_ID: conversation_id,
        sc.COMPACTION_ID: result.compaction_id or "",
        sc.TURN_INDEX: result.start_turn,
        sc.REDISCOVERY_CALLS: result.calls,
        sc.REDISCOVERY_TOKENS: result.tokens,
        sc.REDISCOVERY_TURNS: result.turns,
        sc.REDISCOVERY_HORIZON_TURNS: result.horizon_turns,
    }
    if result.tools:
        out[sc.REDISCOVERY_TOOLS] = list(result.tools)
    base = baseline.mean_tokens if baseline is not None else None
    if base is not None:
        out[sc.REDISCOVERY_BASELINE_TOKENS] = _r(base)
    advice = rediscovery_advice(result, base)
    if advice is not None:
        out[sc.REDISCOVERY_ADVICE] = advice
    return out


def rediscovery_advice(result: Rediscovery, baseline_tokens: float | None) -> str | None:
    """What to keep next time, when a compaction's horizon redid more than the conversation's
    baseline: the tools whose outputs were fetched again (None when it redid no more)."""
    if not result.calls or not result.tools:
        return None
    if baseline_tokens is not None and result.tokens <= baseline_tokens:
        return None
    tools = ", ".join(result.tools)
    return (
        f"redid {result.calls} tool call(s) made before the compaction ({result.tokens:,} "
        f"tokens of results, {tools}) in the {result.horizon_turns} calls after it: keep the "
        f"latest outputs of {tools} verbatim (in the retained tail, or pinned outside the "
        "compacted region) at the next compaction"
    )


def truncate_content(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut captured content to ``max_chars``, marking what was left out.

    Returns the text to record and whether it was truncated.
    """
    if len(text) <= max_chars:
        return text, False
    omitted = len(text) - max_chars
    return text[:max_chars] + sc.TRUNCATION_MARKER.format(omitted=omitted), True
