"""otel-compaction: OpenTelemetry for LLM agents that compact their context.

The data flow, one way (folders named for their stage)::

    LLM call ─▶ instrument/ (wraps the clients, spans) ─▶ inference/ (which conversation,
    what was compacted) ─▶ signals/ (pressure, phase) ─▶ lineage/ (compactions, cycles)
    ─▶ detectors/ (boundary, livelock, ineffective, ...) ─▶ emit/ (spans, metrics) ─▶ OTLP

    OTLP ─▶ otlp/ (decode, engine inputs, the engine per conversation) ─▶ processor/ (the
    service behind the Collector) or report/ and transcripts/ (``otel-compaction analyze``)

Usage::

    from otel_compaction import CompactionInstrumentor, conversation
    CompactionInstrumentor().instrument()
    with conversation("ticket-4711"):
        client.messages.create(...)

An agent that wants to act, not only watch, asks ``advise()`` about its current
conversation (or reacts to ``instrument(on_finding=...)``); the rest of the policy
API is in ``otel_compaction.policy``; test helpers are in ``otel_compaction.testing``.
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
from otel_compaction.policy import Advice, advise
from otel_compaction.semconv import AdviceAction, CompactionMode, CompactionSource, FindingKind
from otel_compaction.version import __version__

__all__ = [
    "Advice",
    "AdviceAction",
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
    "__version__",
    "advise",
    "compaction",
    "conversation",
    "record_compaction",
    "report_phase",
]
