"""Metric instruments of the compaction analysis, created from ``semconv`` specs.

One ``CompactionMetrics`` per meter: the instrumentation and the processor both
use it, so a dashboard cannot tell (and need not care) where a compaction was
analyzed. Per-conversation ids never become metric attributes: they reach the
backends as exemplars instead. Every ``record_*`` takes the context of the span the
measurement belongs to (the inference or compaction span), so the SDK's default
``trace_based`` exemplar filter samples that span's trace and span id, not whatever
span the caller had current.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, Observation

from otel_compaction import semconv as sc
from otel_compaction._bounded import BoundedMap
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionRecord,
    PhaseTransition,
    Rediscovery,
    TurnAnalysis,
)
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
        "_call_attributes",
        "_compactions",
        "_errors",
        "_failed",
        "_findings",
        "_gauges",
        "_generation",
        "_interval",
        "_reclaimed",
        "_rediscovery",
        "_residual",
        "_token_fraction",
        "_transitions",
        "_trigger_fraction",
        "_turn_attributes",
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
        self._failed = create_instrument(meter, sc.METRIC_FAILED_COMPACTIONS)
        self._findings = create_instrument(meter, sc.METRIC_FINDINGS)
        self._transitions = create_instrument(meter, sc.METRIC_PHASE_TRANSITIONS)
        self._errors = create_instrument(meter, sc.METRIC_INSTRUMENTATION_ERRORS)
        self._token_fraction = create_instrument(meter, sc.METRIC_TOKEN_FRACTION)
        self._trigger_fraction = create_instrument(meter, sc.METRIC_COMPACTION_TOKEN_FRACTION)
        self._interval = create_instrument(meter, sc.METRIC_INTERVAL)
        self._reclaimed = create_instrument(meter, sc.METRIC_RECLAIMED)
        self._residual = create_instrument(meter, sc.METRIC_RESIDUAL)
        self._rediscovery = create_instrument(meter, sc.METRIC_REDISCOVERY)
        self._generation = create_instrument(meter, sc.METRIC_GENERATION)
        self._gauges = [
            create_gauge(meter, spec, fn)
            for spec, fn in ((sc.METRIC_LIVELOCKED, livelocked), (sc.METRIC_ACTIVE, active))
            if fn is not None
        ]
        # Metric attribute sets built once and reused: the SDK copies what it is given, so a
        # shared dict is never changed, and a call then allocates no attribute dict of its own.
        self._turn_attributes: BoundedMap[str | None, dict[str, str]] = BoundedMap(
            _MAX_ATTRIBUTE_SETS
        )
        self._call_attributes: BoundedMap[tuple[str, str, str | None], _CallAttributes] = (
            BoundedMap(_MAX_ATTRIBUTE_SETS)
        )
        self._prime()

    def _prime(self) -> None:
        for source in CompactionSource:
            for mode in CompactionMode:
                self._compactions.add(
                    0, {sc.COMPACTION_SOURCE: source.value, sc.COMPACTION_MODE: mode.value}
                )
        for kind in FindingKind:
            self._findings.add(0, {sc.FINDING_KIND: kind.value})
        for source in CompactionSource:
            self._failed.add(
                0, {sc.COMPACTION_SOURCE: source.value, sc.COMPACTION_ERROR: "unknown"}
            )
        for stage in sc.ERROR_STAGES:
            self._errors.add(0, {sc.ERROR_STAGE: stage})

    def hold_records(self, hold: Callable[[Any], Any]) -> None:
        """Pass the instruments recorded per compaction, transition and rediscovery through
        ``hold`` (the processor's records them in bulk once per step, ``processor.bulk``);
        the counters' zeros are recorded already."""
        for name in _HELD:
            setattr(self, name, hold(getattr(self, name)))

    @property
    def token_fraction(self) -> Any:
        """The ``compaction.context.token_fraction`` histogram (the processor's in bulk)."""
        return self._token_fraction

    def turn_attributes(self, provider: str | None) -> dict[str, str]:
        """The attribute set a turn of ``provider`` is recorded with (built once, shared)."""
        return self._turn_attributes.cached(provider, _turn_attributes)

    def record_turn(
        self,
        analysis: TurnAnalysis,
        provider: str | None = None,
        *,
        context: Context | None = None,
    ) -> None:
        """Record the token fraction of one inference call (``context``: its span's)."""
        attrs = self._turn_attributes.cached(provider, _turn_attributes)  # turn_attributes inline
        self._token_fraction.record(analysis.pressure.token_fraction, attrs, context=context)

    def record_call(
        self,
        seconds: float,
        input_tokens: int | None,
        output_tokens: int | None,
        *,
        operation: str,
        provider: str,
        model: str | None,
        error_type: str | None = None,
        context: Context | None = None,
    ) -> None:
        """Record ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``.

        Attributes are the GenAI conventions': operation, provider, requested model (when
        known), ``error.type`` on the duration of a failed call, the token type on usage.
        ``context`` is the inference span's.
        """
        key = (operation, provider, model)
        attrs = self._call_attributes.cached(key, _CallAttributes.of)
        duration = attrs.duration
        if error_type is not None:
            duration = {**duration, sc.ERROR_TYPE: error_type}
        self.duration.record(seconds, duration, context=context)
        # The SDK refuses negative amounts with a warning in the host: never pass one.
        if input_tokens is not None and input_tokens >= 0:
            self.token_usage.record(input_tokens, attrs.input, context=context)
        if output_tokens is not None and output_tokens >= 0:
            self.token_usage.record(output_tokens, attrs.output, context=context)

    def record_transition(
        self, transition: PhaseTransition, source: str, *, context: Context | None = None
    ) -> None:
        """Count one change of phase (``context``: the span it was first seen on)."""
        self._transitions.add(
            1,
            {
                sc.PHASE_FROM: transition.from_phase,
                sc.PHASE_TO: transition.to_phase,
                sc.PHASE_SOURCE: source,
            },
            context=context,
        )

    def record_compaction(
        self, analysis: CompactionAnalysis, *, context: Context | None = None
    ) -> None:
        """Record a compaction, its cycle and lineage, and count its findings (``context``:
        the compaction span's)."""
        rec = analysis.record
        both = {sc.COMPACTION_SOURCE: rec.source.value, sc.COMPACTION_MODE: rec.mode.value}
        source_only = {sc.COMPACTION_SOURCE: rec.source.value}
        self._compactions.add(1, both, context=context)
        if rec.token_fraction is not None:
            self._trigger_fraction.record(rec.token_fraction, both, context=context)
        self._record_reclaimed(rec, both, context)
        if rec.failed:
            self._failed.add(1, {**source_only, sc.COMPACTION_ERROR: rec.error or "unknown"})
        if rec.cycle is not None:
            self._interval.record(rec.cycle.interval_turns, source_only, context=context)
            # Histograms take no negative values (the SDK drops them); a cycle that grew
            # less than its new content has no re-expansion, which 0 says.
            self._residual.record(max(rec.cycle.residual_tokens, 0), source_only, context=context)
        self._generation.record(rec.generation, source_only, context=context)
        for finding in analysis.findings:
            self._findings.add(1, {sc.FINDING_KIND: finding.kind.value}, context=context)

    def record_settled(
        self, settled: CompactionAnalysis, *, context: Context | None = None
    ) -> None:
        """Record what a compaction's settlement added (``TurnAnalysis.settled``): the
        tokens it reclaimed, now that the size after is known, and its late findings (only
        the findings of a ``hindsight`` analysis: its sizes were recorded at settlement)."""
        rec = settled.record
        if not settled.hindsight:
            both = {sc.COMPACTION_SOURCE: rec.source.value, sc.COMPACTION_MODE: rec.mode.value}
            self._record_reclaimed(rec, both, context)
        for finding in settled.findings:
            self._findings.add(1, {sc.FINDING_KIND: finding.kind.value}, context=context)

    def _record_reclaimed(
        self, rec: CompactionRecord, attributes: dict[str, str], context: Context | None
    ) -> None:
        if rec.tokens_before is not None and rec.tokens_after is not None:
            reclaimed = max(rec.tokens_before - rec.tokens_after, 0)
            self._reclaimed.record(reclaimed, attributes, context=context)

    def record_rediscovery(self, result: Rediscovery, *, context: Context | None = None) -> None:
        """Record what a compaction's rediscovery horizon measured (``context``: a span in
        the compaction's trace, for the exemplar)."""
        self._rediscovery.record(result.tokens, context=context)

    def record_error(self, stage: str) -> None:
        """Count an internal error that was caught and swallowed at ``stage``."""
        self._errors.add(1, {sc.ERROR_STAGE: stage})


_MAX_ATTRIBUTE_SETS = 256
"""Cached attribute sets per kind (models are few; the least recently used go first)."""


_HELD = ("_compactions", "_findings", "_transitions", "_trigger_fraction", "_interval",
         "_reclaimed", "_residual", "_rediscovery", "_generation")  # fmt: skip
"""``CompactionMetrics``' instruments recorded per compaction, transition and rediscovery."""


def _turn_attributes(provider: str | None) -> dict[str, str]:
    return {sc.GEN_AI_PROVIDER_NAME: provider} if provider else {}


class _CallAttributes:
    """The attribute sets of one (operation, provider, model): duration, input, output."""

    __slots__ = ("duration", "input", "output")

    def __init__(
        self, duration: dict[str, str], input_: dict[str, str], output: dict[str, str]
    ) -> None:
        self.duration = duration
        self.input = input_
        self.output = output

    @classmethod
    def of(cls, key: tuple[str, str, str | None]) -> _CallAttributes:
        """Build the three sets of ``(operation, provider, model)``."""
        operation, provider, model = key
        base = {sc.GEN_AI_OPERATION_NAME: operation, sc.GEN_AI_PROVIDER_NAME: provider}
        if model:
            base[sc.GEN_AI_REQUEST_MODEL] = model
        return cls(
            base,
            {**base, sc.GEN_AI_TOKEN_TYPE: sc.TOKEN_TYPE_INPUT},
            {**base, sc.GEN_AI_TOKEN_TYPE: sc.TOKEN_TYPE_OUTPUT},
        )
