"""emit/: turn analyses, compactions and findings into span attributes and metrics.

The last stage of the flow, shared by the in-process instrumentation, the
processor service and the transcript importer, so that the same analysis
always produces the same telemetry.
"""

from otel_compaction.emit.attributes import (
    compaction_attributes,
    finding_attributes,
    transition_event_attributes,
    truncate_content,
    turn_attributes,
)
from otel_compaction.emit.metrics import CompactionMetrics

__all__ = [
    "CompactionMetrics",
    "compaction_attributes",
    "finding_attributes",
    "transition_event_attributes",
    "truncate_content",
    "turn_attributes",
]
