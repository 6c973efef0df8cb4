"""Source note 001's rubric: short runs, preserve-schema coverage, lost tasks.

- ``short_run_compaction``: a compaction with ``turn_index < short_run_turns``
  (default 20), flagged once per conversation: only when it is the
  conversation's first compaction (later ones repeat the same mistake and would
  only add noise). Prune compactions do not count (they write no summary).
- ``summary_schema_coverage``: the summary text is known and covers fewer than
  ``schema_min_coverage`` of ``schema_fields``. Not raised for failed or empty
  summaries (that is ``lost_task``).
- ``lost_task``: the summary step failed (``failed``), or the result is empty:
  ``tokens_after == 0``, or an empty summary (0 tokens) from a summarising mode
  (lossy, extractive, server) while the compacted region was not empty (an
  unknown region counts as not empty). A failed summary must defer and never
  blank the context.
"""

from __future__ import annotations

from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.model import Finding
from otel_compaction.semconv import CompactionMode, FindingKind


def short_run_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag the first compaction of a conversation shorter than ``short_run_turns``."""
    record, limit = ctx.record, ctx.settings.short_run_turns
    if ctx.history or record.mode is CompactionMode.PRUNE or record.turn_index >= limit:
        return None
    reason = (
        f"compaction at turn {record.turn_index}, before the run reached {limit} turns; "
        f"short runs should not compact: the summary costs more than the history "
        f"it replaces"
    )
    return ctx.finding(FindingKind.SHORT_RUN_COMPACTION, "short_run", reason)


def summary_schema_coverage(ctx: DetectionContext) -> Finding | None:
    """Flag a summary that covers too few preserve-schema fields."""
    record, s = ctx.record, ctx.settings
    coverage = record.schema_coverage
    if coverage is None or record.failed or not record.summary_tokens:
        return None
    if coverage >= s.schema_min_coverage:
        return None
    present = len(s.schema_fields) - len(record.missing_fields)
    reason = (
        f"summary covers {present} of {len(s.schema_fields)} preserve-schema fields "
        f"({coverage:.0%} < {s.schema_min_coverage:.0%}); missing: "
        f"{', '.join(record.missing_fields)}; pin the schema in the summarizer prompt"
    )
    return ctx.finding(FindingKind.SUMMARY_SCHEMA_COVERAGE, "schema", reason)


_SUMMARISING = frozenset({CompactionMode.LOSSY, CompactionMode.EXTRACTIVE, CompactionMode.SERVER})
_DEFER = "a failed summary must defer and never blank the context"


def lost_task(ctx: DetectionContext) -> Finding | None:
    """Flag a compaction whose summary failed or whose result is empty."""
    record = ctx.record
    turn = record.turn_index
    if record.failed:
        reason = f"the summary step of the compaction at turn {turn} failed; {_DEFER}"
        return ctx.finding(FindingKind.LOST_TASK, "failed", reason)
    if record.tokens_after == 0:
        before = "" if record.tokens_before is None else f" (from {record.tokens_before})"
        reason = f"the compaction at turn {turn} left an empty context{before}; {_DEFER}"
        return ctx.finding(FindingKind.LOST_TASK, "empty_context", reason)
    region = ctx.compacted_tokens
    if record.summary_tokens == 0 and record.mode in _SUMMARISING and region != 0:
        size = "" if region is None else f" of {region} tokens"
        reason = (
            f"the compaction at turn {turn} produced an empty summary of a compacted "
            f"region{size}; {_DEFER}"
        )
        return ctx.finding(FindingKind.LOST_TASK, "empty_summary", reason)
    return None


SHORT_RUN_DETECTOR = RuleDetector(FindingKind.SHORT_RUN_COMPACTION, short_run_compaction)
SCHEMA_DETECTOR = RuleDetector(FindingKind.SUMMARY_SCHEMA_COVERAGE, summary_schema_coverage)
LOST_TASK_DETECTOR = RuleDetector(FindingKind.LOST_TASK, lost_task)
