"""The rubric: short runs, preserve-schema coverage, lost tasks.

Why: docs/concepts.md#short-runs, #the-preserve-schema and
#a-summary-must-never-blank-the-context.

- ``short_run_compaction``: the first compaction of a run that ended under
  ``short_run_turns`` turns (default 20), fired below the pressure threshold:
  judged at the run's end, when its length is known (``needs_run_end``), never
  while it runs. Flagged once per conversation: only the first compaction (later
  ones repeat the same mistake and would only add noise). Prune compactions do
  not count (they write no summary); a compaction forced by a full window is not
  a short run's mistake.
- ``summary_schema_coverage``: the summary text is known, follows a template the
  rule knows (a known summarizer's, or the user's pinned ``schema_fields``), and
  covers fewer than ``schema_min_coverage`` of the fields that template asks for.
  A summary of no known template is not judged. Not raised for failed or empty
  summaries (that is ``lost_task``).
- ``lost_task``: the result lost the task. An empty summary (0 tokens) from a
  summarising mode (lossy, extractive, server) while the compacted region was
  not empty (an unknown region counts as not empty); once settled, a next call
  with an empty context, or a failed summary step after which the context still
  shrank (by ``ineffective_min_reclaimed`` or more) with no summary in its
  place. A failed summary step that kept the context deferred, as the rubric
  asks: it is counted, not flagged.
"""

from __future__ import annotations

from otel_compaction.detectors.base import DetectionContext, RuleDetector
from otel_compaction.lineage.schema import (
    asked_fields,
    flags_by_default,
    template_headings,
    template_title,
)
from otel_compaction.model import Finding
from otel_compaction.semconv import CompactionMode, FindingKind


def short_run_compaction(ctx: DetectionContext) -> Finding | None:
    """Flag the first compaction of a run that ended short and compacted without pressure.

    A run is short when it *ended* under ``short_run_turns`` turns: a compaction at turn
    11 of a run that goes on to 40 turns is not a short run's, so the rule is judged
    once the run's length is known (``ctx.run_turns``, at the run's end) and never while
    it runs. The rubric's reason, "the summary costs more than the history it replaces",
    is true only of a small history: a run that compacts at turn 2 with its window full
    (a large fixed prompt, a huge first read) had no choice, and that case is
    ``ineffective_compaction``'s or nobody's. So the rule needs the size at the
    compaction, below the pressure threshold (and below the hard ceiling, whichever is
    lower: a full window forces a compaction).
    """
    record, s, run = ctx.record, ctx.settings, ctx.run_turns
    limit = s.short_run_turns
    if run is None or run >= limit or record.turn_index >= limit:
        return None
    if ctx.history or record.mode is CompactionMode.PRUNE or record.failed:
        return None  # a later one repeats the mistake; a prune or a failure replaced nothing
    fired = ctx.fired_at()
    if fired is None or fired.fraction >= min(s.pressure_threshold, s.hard_ceiling):
        return None
    replaced = ctx.compacted_tokens
    history = f" {replaced:,} tokens of history" if replaced else " its history"
    reason = (
        f"compaction at turn {record.turn_index} of a run that ended at turn {run}, "
        f"under {limit} turns, at {fired.text()} (below the {s.pressure_threshold:.2f} "
        f"pressure threshold): a short run with room left should not compact; "
        f"summarizing{history} cost more than carrying it to the end of the run"
    )
    return ctx.finding(FindingKind.SHORT_RUN_COMPACTION, "short_run", reason)


def summary_schema_coverage(ctx: DetectionContext) -> Finding | None:
    """Flag a summary that covers too few of the fields its template asks for.

    Judged only against the template the summarizer was given (the record's
    ``summary_template``: a known summarizer's, or the user's pinned schema), on the
    fields that template asks for; a summary of no known template has no coverage and
    is not judged (``lineage.schema.judge_summary``). Under ``schema_template = "auto"``
    only a template checked on real summaries flags (``flags_by_default``); the others
    are measured, and flag when the user names them.
    """
    record, s = ctx.record, ctx.settings
    coverage = record.schema_coverage
    if coverage is None or record.failed or not record.summary_tokens:
        return None
    if coverage >= s.schema_min_coverage:
        return None
    if s.schema_template == "auto" and not flags_by_default(record.summary_template):
        return None  # measured on the span; flagged once the user names the template
    asked = asked_fields(record.summary_template, s.schema_fields) or s.schema_fields
    present = len(asked) - len(record.missing_fields)
    title = template_title(record.summary_template)
    asked_by = f"{title} asks for" if title else "pinned in the summarizer's prompt"
    reason = (
        f"summary covers {present} of the {len(asked)} preserve-schema fields {asked_by} "
        f"({coverage:.0%} < {s.schema_min_coverage:.0%}); missing: "
        f"{', '.join(_named(f, record.summary_template) for f in record.missing_fields)}; "
        f"{_REMEDY}"
    )
    return ctx.finding(FindingKind.SUMMARY_SCHEMA_COVERAGE, "schema", reason)


_REMEDY = "the summarizer dropped sections it was asked for: pin them in its prompt"


def _named(field: str, template: str | None) -> str:
    """``field``, with the heading that carries it in ``template``: 'plan ("pending tasks")'."""
    headings = template_headings(template, field)
    return f"{field} ({' / '.join(repr(h) for h in headings)})" if headings else field


_SUMMARISING = frozenset({CompactionMode.LOSSY, CompactionMode.EXTRACTIVE, CompactionMode.SERVER})
_DEFER = "a failed summary must defer and never blank the context"


def lost_task(ctx: DetectionContext) -> Finding | None:
    """Flag a compaction that produced an empty summary of a non-empty region."""
    record = ctx.record
    region = ctx.compacted_tokens
    if record.failed or record.summary_tokens != 0 or record.mode not in _SUMMARISING:
        return None
    if region == 0:
        return None
    size = "" if region is None else f" of {region:,} tokens"
    reason = (
        f"the compaction at turn {record.turn_index} produced an empty summary of a "
        f"compacted region{size}; {_DEFER}"
    )
    return ctx.finding(FindingKind.LOST_TASK, "empty_summary", reason)


def lost_task_after(ctx: DetectionContext) -> Finding | None:
    """Flag a compaction whose next call lost the task: blanked, or a failure that shrank it.

    A failed summary step after which the context is as large as before deferred,
    as it should (rubric): it is counted as failed, not flagged.
    """
    record, s = ctx.record, ctx.settings
    turn, before, after = record.turn_index, record.tokens_before, record.tokens_after
    if after is None:
        return None
    was = "" if before is None else f" (from {before:,})"
    if after == 0:
        reason = f"the compaction at turn {turn} left an empty context{was}; {_DEFER}"
        return ctx.finding(FindingKind.LOST_TASK, "empty_context", reason)
    if not record.failed or before is None or before <= 0:
        return None
    if (before - after) / before < s.ineffective_min_reclaimed:
        return None  # the failure kept the context: it deferred
    error = f" ({record.error})" if record.error else ""
    reason = (
        f"the summary step of the compaction at turn {turn} failed{error}, yet the next "
        f"call's context shrank to {after:,} tokens{was} with no summary in its place; "
        f"{_DEFER}"
    )
    return ctx.finding(FindingKind.LOST_TASK, "failed", reason)


SHORT_RUN_DETECTOR = RuleDetector(
    FindingKind.SHORT_RUN_COMPACTION, short_run_compaction, needs_run_end=True
)
SCHEMA_DETECTOR = RuleDetector(FindingKind.SUMMARY_SCHEMA_COVERAGE, summary_schema_coverage)
LOST_TASK_DETECTOR = RuleDetector(FindingKind.LOST_TASK, lost_task)
LOST_TASK_AFTER_DETECTOR = RuleDetector(
    FindingKind.LOST_TASK, lost_task_after, needs_size_after=True
)
