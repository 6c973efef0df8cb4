"""Instrumentation of the anthropic and openai clients, and the agent-facing API.

``CompactionInstrumentor`` wraps the clients (``opentelemetry-instrument`` finds
it through the ``opentelemetry_instrumentor`` entry point ``compaction``); the
functions name conversations and report phases and compactions explicitly.
See ``docs/instrumentation.md``.
"""

from otel_compaction.instrument._instrumentor import CompactionInstrumentor
from otel_compaction.instrument.context import (
    CompactionScope,
    ConversationScope,
    compaction,
    conversation,
    record_compaction,
    report_phase,
)

__all__ = [
    "CompactionInstrumentor",
    "CompactionScope",
    "ConversationScope",
    "compaction",
    "conversation",
    "record_compaction",
    "report_phase",
]
