"""Enrich-mode output: the spans pass through with the processor's own verdicts on them.

On a compaction span (or Claude Code ``claude_code.compaction`` log record),
every ``compaction.flag.*`` attribute the agent set is removed and the flags
the processor computed with its own thresholds are written instead, so the
next hop sees one verdict, never two. A compaction that came from a foreign
source (no ``compaction.id`` of ours) also gets the whole analysis: lineage,
cycle, the state it fired in.
"""

from __future__ import annotations

from typing import Any

from otel_compaction import semconv as sc
from otel_compaction.emit.attributes import compaction_attributes, flag_attributes
from otel_compaction.model import CompactionAnalysis
from otel_compaction.otlp.attributes import replace_attributes


def write_flags(target: Any, analysis: CompactionAnalysis) -> bool:
    """Replace the flags on ``target`` by those of ``analysis``; False when nothing changed."""
    ours = any(kv.key == sc.COMPACTION_ID for kv in target.attributes)
    if ours:
        return replace_attributes(target, flag_attributes(analysis.findings), remove=sc.FLAG_KEYS)
    return replace_attributes(target, compaction_attributes(analysis), remove=sc.FLAG_KEYS)
