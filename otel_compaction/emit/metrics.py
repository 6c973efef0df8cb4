"""Metric instruments of the compaction analysis, created from ``semconv`` specs.

One ``CompactionMetrics`` per meter: the instrumentation and the processor both
use it, so a dashboard cannot tell (and need not care) where a compaction was
analyzed. Per-conversation ids never become metric attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from otel_compaction import semconv as sc
from otel_compaction.model import CompactionAnalysis, PhaseTransition, TurnAnalysis
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind, MetricSpec

CountFn = Callable[[], int]


def create_instrument(meter: Meter, spec: MetricSpec) -> Any:
    """Create the synchronous instrument ``spec`` describes (bucket advice included)."""
    if spec.kind == "counter":
        return meter.create_counter(spec.name, unit=spec.unit, description=spec.description)
    if spec.kind == "histogram":
        return meter.create_histogram(
            spec.name,
            unit=spec.unit,
            description=spec.description,
            explicit_bucket_boundaries_advisory=list(spec.buckets or ()),
        )
    if spec.kind == "updowncounter":
        return meter.create_up_down_counter(spec.name, unit=spec.unit, description=spec.description)
    raise ValueError(f"{spec.name}: no synchronous instrument for kind {spec.kind!r}")


def create_gauge(meter: Meter, spec: MetricSpec, count: CountFn) -> Any:
    """An observable gauge that reports ``count()`` at each collection."""

    def callback(_options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(count())]

    return meter.create_observable_gauge(
        spec.name, callbacks=[callback], unit=spec.unit, description=spec.description
    )


class CompactionMetrics:
    """Records turns, compactions, findings, transitions and internal errors.

    Args:
        meter: where the instruments live.
        livelocked: returns the number of conversations in livelock now.
        active: returns the number of conversations tracked now.

    Every counter is recorded at 0 for its known attribute sets at creation, so
    the first real event is an increase that ``increase()`` alerts can see.
    """

    __slots__ = (
        "_compactions",
        "_errors",
        "_findings",
        "_gauges",
        "_generation",
        "_interval",
        "_reclaimed",
        "_residual",
        "_token_fraction",
        "_transitions",
        "_trigger_fraction",
        "duration",
        "token_usage",
    )

    def __init__(
        self,
        meter: Meter,
        *,
        livelocked: CountFn | None = None,
        active: CountFn | None = None,
    ) -> None:
        self.token_usage = create_instrument(meter, sc.METRIC_TOKEN_USAGE)
        self.duration = create_instrument(meter, sc.METRIC_OPERATION_DURATION)
        self._compactions = create_instrument(meter, sc.METRIC_COMPACTIONS)
        self._findings = create_instrument(meter, sc.METRIC_FINDINGS)
        self._transitions = create_instrument(meter, sc.METRIC_PHASE_TRANSITIONS)
        self._errors = create_instrument(meter, sc.METRIC_INSTRUMENTATION_ERRORS)
        self._token_fraction = create_instrument(meter, sc.METRIC_TOKEN_FRACTION)
        self._trigger_fraction = create_instrument(meter, sc.METRIC_COMPACTION_TOKEN_FRACTION)
        self._interval = create_instrument(meter, sc.METRIC_INTERVAL)
        self._reclaimed = create_instrument(meter, sc.METRIC_RECLAIMED)
        self._residual = create_instrument(meter, sc.METRIC_RESIDUAL)
        self._generation = create_instrument(meter, sc.METRIC_GENERATION)
        self._gauges = [
            create_gauge(meter, spec, fn)
            for spec, fn in ((sc.METRIC_LIVELOCKED, livelocked), (sc.METRIC_ACTIVE, active))
            if fn is not None
        ]
        self._prime()

    def _prime(self) -> None:
        for source in CompactionSource:
            for mode in CompactionMode:
                self._compactions.add(
                    0, {sc.COMPACTION_SOURCE: source.value, sc.COMPACTION_MODE: mode.value}
                )
        for kind in FindingKind:
            self._findings.add(0, {sc.FINDING_KIND: kind.value})
        for stage in sc.ERROR_STAGES:
            self._errors.add(0, {sc.ERROR_STAGE: stage})

    def record_turn(self, analysis: TurnAnalysis, provider: str | None = None) -> None:
        """Record the token fraction of one inference call."""
        attrs = {sc.GEN_AI_PROVIDER_NAME: provider} if provider else {}
        self._token_fraction.record(analysis.pressure.token_fraction, attrs)

    def record_transition(self, transition: PhaseTransition, source: str) -> None:
        """Count one change of phase."""
        self._transitions.add(
            1,
            {
                sc.PHASE_FROM: transition.from_phase,
                sc.PHASE_TO: transition.to_phase,
                sc.PHASE_SOURCE: source,
            },
        )

    def record_compaction(self, analysis: CompactionAnalysis) -> None:
        """Record a compaction, its cycle and lineage, and count its findings."""
        rec = analysis.record
        both = {sc.COMPACTION_SOURCE: rec.source.value, sc.COMPACTION_MODE: rec.mode.value}
        source_only = {sc.COMPACTION_SOURCE: rec.source.value}
        self._compactions.add(1, both)
        if rec.token_fraction is not None:
            self._trigger_fraction.record(rec.token_fraction, both)
        if rec.tokens_before is not None and rec.tokens_after is not None:
            self._reclaimed.record(max(rec.tokens_before - rec.tokens_after, 0), both)
        if rec.cycle is not None:
            self._interval.record(rec.cycle.interval_turns, source_only)
            # Histograms take no negative values (the SDK drops them); a cycle that grew
            # less than its new content has no re-expansion, which 0 says.
            self._residual.record(max(rec.cycle.residual_tokens, 0), source_only)
        self._generation.record(rec.generation, source_only)
        for finding in analysis.findings:
            self._findings.add(1, {sc.FINDING_KIND: finding.kind.value})

    def record_error(self, stage: str) -> None:
        """Count an internal error that was caught and swallowed at ``stage``."""
        self._errors.add(1, {sc.ERROR_STAGE: stage})
