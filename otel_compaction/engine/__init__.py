"""The engine every path shares: one analyzer per conversation, many in a registry.

The instrumentation (in the agent's process), the processor service (behind the
Collector) and ``otel-compaction analyze`` all feed the same
:class:`ConversationAnalyzer`, held in a :class:`ConversationRegistry`, so a verdict
never depends on where it was computed. The engine glues the pure stages
(``signals/``, ``lineage/``, ``detectors/``) together; docs/concepts.md
(*Where the analysis runs*) draws the flow.
"""

from otel_compaction.engine.analyzer import AnalyzerSetup, ConversationAnalyzer, split_detectors
from otel_compaction.engine.registry import LOCK_STRIPES, ConversationRegistry

__all__ = [
    "LOCK_STRIPES",
    "AnalyzerSetup",
    "ConversationAnalyzer",
    "ConversationRegistry",
    "split_detectors",
]
