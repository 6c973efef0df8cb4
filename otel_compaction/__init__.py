"""otel-compaction: OpenTelemetry for LLM agents that compact their context.

The data flow, one way::

    LLM call ─▶ instrument/ ─▶ signals/ (pressure, phase) ─▶ lineage/ (compactions,
    cycles) ─▶ detectors/ (boundary, livelock, ...) ─▶ emit/ (spans, metrics) ─▶ OTLP

Usage::

    from otel_compaction import CompactionInstrumentor, conversation
    CompactionInstrumentor().instrument()
    with conversation("ticket-4711"):
        client.messages.create(...)

The policy API for agents that want to act, not only watch, is in
``otel_compaction.policy``; test helpers are in ``otel_compaction.testing``.
"""

from otel_compaction.config import Settings
from otel_compaction.instrument import (
    CompactionInstrumentor,
    compaction,
    conversation,
    record_compaction,
    report_phase,
)
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    Finding,
    PhaseReport,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind

__all__ = [
    "CompactionAnalysis",
    "CompactionInstrumentor",
    "CompactionMode",
    "CompactionObservation",
    "CompactionSource",
    "Finding",
    "FindingKind",
    "PhaseReport",
    "Settings",
    "TurnObservation",
    "compaction",
    "conversation",
    "record_compaction",
    "report_phase",
]
