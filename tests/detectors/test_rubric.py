"""The rubric: short runs, preserve-schema coverage, lost tasks; and the detector loop.

Why: docs/concepts.md#short-runs, #the-preserve-schema, #a-summary-must-never-blank-the-context.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest

from otel_compaction.config import Settings
from otel_compaction.detectors import (
    DEFAULT_DETECTORS,
    DetectionContext,
    RuleDetector,
    lost_task,
    lost_task_after,
    run_detectors,
    short_run_compaction,
    summary_schema_coverage,
)
from otel_compaction.model import Finding, Pressure
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind
from tests.detectors.records import RecordFields, context_of, record


def _ended(ctx: DetectionContext, run_turns: int = 19) -> DetectionContext:
    """``ctx`` judged at the end of a run of ``run_turns`` turns."""
    return dataclasses.replace(ctx, run_turns=run_turns)


@pytest.mark.parametrize(("turn", "flagged"), [(1, True), (19, True), (20, False), (45, False)])
def test_short_run_threshold(turn: int, flagged: bool) -> None:
    """A first compaction without pressure in a run that ended under 20 turns is flagged; a
    compaction at turn 20 or later is not."""
    ctx = context_of([record(turn, token_fraction=0.3)])
    finding = short_run_compaction(_ended(ctx, run_turns=max(turn, 19)))
    assert (finding is not None) is flagged
    if finding is not None:
        assert finding.kind is FindingKind.SHORT_RUN_COMPACTION
        assert f"turn {turn} of a run that ended at turn 19" in finding.reason
        assert "token fraction 0.30" in finding.reason


@pytest.mark.parametrize(("run_turns", "flagged"), [(None, False), (12, True), (19, True)])
def test_short_run_is_judged_when_the_run_has_ended(run_turns: int | None, flagged: bool) -> None:
    """While the run goes on (its length unknown) nothing is said; once it has ended under
    20 turns, the compaction at turn 11 was a short run's."""
    ctx = dataclasses.replace(context_of([record(11, token_fraction=0.3)]), run_turns=run_turns)
    assert (short_run_compaction(ctx) is not None) is flagged


@pytest.mark.parametrize("run_turns", [20, 40])
def test_a_compaction_at_turn_11_of_a_long_run_is_no_short_run(run_turns: int) -> None:
    """A run that went on to 20 or 40 turns was no short run, however early it
    compacted."""
    ctx = context_of([record(11, token_fraction=0.3)])
    assert short_run_compaction(_ended(ctx, run_turns)) is None


@pytest.mark.parametrize("fraction", [0.65, 0.88, None])
def test_short_run_needs_room_left(fraction: float | None) -> None:
    """A short run that compacted with its window full (a real subagent at turn 2 with 170,000
    tokens) or of unknown size is not told its history was cheap to keep: no finding."""
    ctx = context_of([record(2, token_fraction=fraction)])
    assert short_run_compaction(_ended(ctx)) is None


def test_short_run_at_the_hard_ceiling_is_forced() -> None:
    """With a hard ceiling below the pressure threshold, a compaction at the ceiling was
    forced by a full window: not a short run's mistake."""
    s = Settings(pressure_threshold=0.8, hard_ceiling=0.5)
    assert short_run_compaction(_ended(context_of([record(3, token_fraction=0.6)], s))) is None
    assert short_run_compaction(_ended(context_of([record(3, token_fraction=0.4)], s)))


def test_short_run_counts_the_turn_summarized_unsent() -> None:
    """An inferred rewrite measured at the last call's 0.63, a turn of 0.11 short of the
    agent's own count (it summarized the turn no call carried), fired at pressure."""
    rec = record(
        7,
        source=CompactionSource.INFERRED,
        tokens_before=126_000,
        token_fraction=0.63,
        growth_per_turn=22_000.0,
    )
    last = Pressure(context_tokens=126_000, window=200_000, token_fraction=0.63, attention_decay=0)
    assert short_run_compaction(_ended(context_of([rec], pressure=last))) is None
    small = dataclasses.replace(rec, growth_per_turn=2_000.0)
    finding = short_run_compaction(_ended(context_of([small], pressure=last)))
    assert finding is not None
    assert "at token fraction about 0.64 (0.63 at the last call" in finding.reason


def test_short_run_names_the_history_replaced() -> None:
    """The reason gives the size of the history the summary replaced, when known."""
    ctx = context_of([record(6, token_fraction=0.2)], compacted_tokens=9_000)
    finding = short_run_compaction(_ended(ctx))
    assert finding is not None
    assert "summarizing 9,000 tokens of history" in finding.reason


def test_a_failed_compaction_is_no_short_run() -> None:
    """A failed summary step replaced nothing: no short-run finding."""
    ctx = context_of([record(4, token_fraction=0.2, failed=True)])
    assert short_run_compaction(_ended(ctx)) is None


def test_short_run_is_flagged_once_per_conversation() -> None:
    """Only the first compaction of a short run is flagged, not the ones after it."""
    ctx = context_of([record(5, token_fraction=0.2), record(12, token_fraction=0.2)])
    assert short_run_compaction(_ended(ctx)) is None


def test_short_run_ignores_prune() -> None:
    """Pruning tool outputs writes no summary, so it is not a short-run compaction."""
    ctx = context_of([record(5, mode=CompactionMode.PRUNE, token_fraction=0.2)])
    assert short_run_compaction(_ended(ctx)) is None


def test_schema_coverage_below_minimum_is_flagged() -> None:
    """A summary covering 2 of 5 fields (40% < 60%) is flagged with the missing fields."""
    rec = record(
        schema_coverage=0.4,
        missing_fields=("decisions", "open_errors", "next_action"),
        summary_tokens=300,
        summary_template="pinned",
    )
    finding = summary_schema_coverage(context_of([rec]))
    assert finding is not None
    assert "2 of the 5 preserve-schema fields pinned in the summarizer's prompt" in finding.reason
    assert "open_errors, next_action" in finding.reason


@pytest.mark.parametrize(
    ("template", "setting", "flagged"),
    [
        ("claude_code", "auto", True),
        ("langchain", "auto", False),
        ("langchain", "langchain", True),
        ("openhands", "pinned", True),
    ],
)
def test_only_templates_checked_on_real_summaries_flag_by_default(
    template: str, setting: str, flagged: bool
) -> None:
    """Under auto, a template checked on real summaries (Claude Code's) flags; one known
    from its prompt only (LangChain's) is measured, and flags once the user names it."""
    rec = record(
        schema_coverage=0.5,
        missing_fields=("plan", "next_action"),
        summary_tokens=300,
        summary_template=template,
    )
    finding = summary_schema_coverage(context_of([rec], Settings(schema_template=setting)))
    assert (finding is not None) is flagged
    if finding is not None and template == "langchain":
        assert "LangChain's SummarizationMiddleware summary asks for" in finding.reason
        assert "plan ('next steps')" in finding.reason


@pytest.mark.parametrize(
    "fields",
    [
        {"schema_coverage": 0.6, "missing_fields": ("a", "b"), "summary_tokens": 300},
        {"schema_coverage": None, "summary_tokens": 300},
        {"schema_coverage": 0.0, "summary_tokens": 0},
        {"schema_coverage": 0.0, "summary_tokens": 300, "failed": True},
    ],
)
def test_schema_coverage_not_flagged(fields: RecordFields) -> None:
    """At the minimum, without text, or for an empty/failed summary (lost_task): no finding."""
    assert summary_schema_coverage(context_of([record(**fields)])) is None


@pytest.mark.parametrize(
    ("fields", "region"),
    [({"summary_tokens": 0}, 90_000), ({"summary_tokens": 0}, None),
     ({"summary_tokens": 0, "mode": CompactionMode.SERVER}, None)],
)  # fmt: skip
def test_an_empty_summary_of_a_real_region_is_a_lost_task(
    fields: RecordFields, region: int | None
) -> None:
    """An empty summary of a region that was not empty (or of unknown size) is a lost task."""
    finding = lost_task(context_of([record(**fields)], compacted_tokens=region))
    assert finding is not None
    assert finding.rule == "empty_summary"
    assert "never blank the context" in finding.reason


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"failed": True, "tokens_before": 150_000, "tokens_after": 40_000}, "failed"),
        ({"tokens_after": 0, "tokens_before": 150_000}, "empty_context"),
        ({"failed": True, "tokens_before": 150_000, "tokens_after": 151_000}, None),
        ({"failed": True, "tokens_before": 150_000, "tokens_after": None}, None),
        ({"tokens_before": 150_000, "tokens_after": 40_000, "summary_tokens": 900}, None),
    ],
)
def test_lost_task_once_settled(fields: RecordFields, rule: str | None) -> None:
    """Once the next call is known: a blanked context, or a failed summary after which the
    context still shrank, lost the task; a failure that kept the context deferred, as it
    should, and is no finding (nor is an unsettled one)."""
    finding = lost_task_after(context_of([record(**fields)]))
    assert (finding.rule if finding is not None else None) == rule
    if finding is not None:
        assert "never blank the context" in finding.reason


@pytest.mark.parametrize(
    ("fields", "region"),
    [
        ({"summary_tokens": 0}, 0),
        ({"summary_tokens": 0, "mode": CompactionMode.PRUNE}, None),
        ({"summary_tokens": 200, "tokens_after": 50_000}, 100_000),
        ({}, None),
        ({"failed": True}, None),
    ],
)
def test_lost_task_not_flagged(fields: RecordFields, region: int | None) -> None:
    """An empty region, a prune, a real summary, unknown sizes or a failure judged before the
    next call are not lost tasks."""
    assert lost_task(context_of([record(**fields)], compacted_tokens=region)) is None


def test_run_detectors_skips_a_detector_that_raises(caplog: pytest.LogCaptureFixture) -> None:
    """A faulty detector is logged and skipped; the others still report."""

    def broken(ctx: DetectionContext) -> Finding | None:
        raise ValueError("bug")

    detectors = (RuleDetector(FindingKind.LOST_TASK, broken), *DEFAULT_DETECTORS)
    with caplog.at_level(logging.ERROR):
        ctx = _ended(context_of([record(5, token_fraction=0.3)]))
        findings = run_detectors(ctx, detectors)
    assert [f.kind for f in findings] == [FindingKind.SHORT_RUN_COMPACTION]
    assert "detector lost_task failed" in caplog.text


def test_default_detectors_cover_every_finding_kind() -> None:
    """Every finding kind has a detector in the default registry."""
    assert {d.kind for d in DEFAULT_DETECTORS} == set(FindingKind)
