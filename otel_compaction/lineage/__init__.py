"""Compaction lineage: which summary was compacted again, and the cycles between them.

``LineageTracker`` keeps one conversation's compactions (bounded), links each to
the earlier compaction whose summary it compacted again, and accounts each
cycle between two compactions.
"""

from __future__ import annotations

from otel_compaction.lineage.cycles import CycleAccumulator
from otel_compaction.lineage.schema import schema_coverage
from otel_compaction.lineage.text import fingerprint, normalise
from otel_compaction.lineage.tracker import LineageTracker

__all__ = ["CycleAccumulator", "LineageTracker", "fingerprint", "normalise", "schema_coverage"]
