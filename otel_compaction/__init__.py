"""otel-compaction: OpenTelemetry for LLM agents that compact their context.

The data flow, one way::

    LLM call ─▶ instrument/ ─▶ signals/ (pressure, phase) ─▶ lineage/ (compactions,
    cycles) ─▶ detectors/ (boundary, livelock, ...) ─▶ emit/ (spans, metrics) ─▶ OTLP

Usage::

    from otel_compaction import CompactionInstrumentor, conversation
    CompactionInstrumentor().instrument()
    with conversation("ticket-4711"):
        client.messages.create(...)
"""

from otel_compaction.config import Settings
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    Finding,
    PhaseReport,
    TurnObservation,
)

__all__ = [
    "CompactionAnalysis",
    "CompactionObservation",
    "Finding",
    "PhaseReport",
    "Settings",
    "TurnObservation",
]
