"""The readable report: a summary line, then each conversation with its findings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from otel_compaction.report.model import ConversationReport, FindingsReport

MAX_LISTED = 30
"""Compaction turns and intervals listed per conversation before eliding."""


def render_text(report: FindingsReport) -> str:
    """The whole report as text, ending with a newline."""
    return "\n".join(_lines(report)) + "\n"


def _lines(report: FindingsReport) -> Iterator[str]:
    compactions = sum(len(c.compactions) for c in report.conversations)
    findings = report.findings
    yield (
        f"otel-compaction analyze: {counted(len(report.conversations), 'conversation')}, "
        f"{counted(compactions, 'compaction')}, {counted(len(findings), 'finding')}"
    )
    formats = Counter(f.format for f in report.files if f.error is None)
    listed = ", ".join(f"{fmt} {count}" for fmt, count in sorted(formats.items()))
    yield (
        f"  inputs: {counted(len(report.files), 'file')} ({listed or 'none readable'}); "
        f"{counted(report.skipped_count, 'line')} skipped"
    )
    for conversation in report.conversations:
        yield ""
        yield from _conversation(conversation)
    if report.skipped:
        yield ""
        yield "skipped lines:"
        yield from (f"  {entry}" for entry in report.skipped)
        if report.skipped_count > len(report.skipped):
            yield f"  ... and {report.skipped_count - len(report.skipped)} more"
    if report.unreadable:
        yield ""
        yield "files that could not be read:"
        yield from (f"  {f.path}: {f.error}" for f in report.unreadable)
    if report.empty:
        yield ""
        yield "empty files (nothing to analyze):"
        yield from (f"  {f.path}" for f in report.empty)
    if report.continuations:
        yield ""
        yield "files that continue others (their repeated records read once):"
        yield from (f"  {c}" for c in report.continuations)
    summary = report.skip_summary
    yield ""
    yield summary.headline()
    yield from (f"  {line}" for line in summary.details())


def _conversation(conv: ConversationReport) -> Iterator[str]:
    origin = ", ".join(x for x in (conv.agent, conv.source) if x)
    yield f"{conv.conversation_id}" + (f"  ({origin})" if origin else "")
    peak = conv.peak_token_fraction
    yield (
        f"  {counted(conv.turn_count, 'turn')}, {counted(len(conv.compactions), 'compaction')}, "
        f"max lineage generation {conv.max_generation}"
        + (f", peak token fraction {peak:.2f}" if peak is not None else "")
    )
    if conv.compactions:
        turns = [c.record.turn_index for c in conv.compactions]
        yield f"  compactions at turns   {_list(turns)}"
        intervals = [c.record.cycle.interval_turns for c in conv.compactions if c.record.cycle]
        if intervals:
            yield f"  intervals (turns)      {_list(intervals)}"
        yield from _ledger(conv)
        yield from _templates(conv)
    findings = conv.findings
    if not findings:
        yield "  no findings"
    for finding in findings:
        rule = f" ({finding.rule})" if finding.rule else ""
        yield f"  FLAGGED turn {finding.turn}: {finding.kind.value}{rule}: {finding.reason}"


def _ledger(conv: ConversationReport) -> Iterator[str]:
    led = conv.ledger
    redone = [r.redone for r in led.rows if r.redone is not None]
    if not redone:
        return
    yield (
        f"  ledger (tokens)        reclaimed {led.reclaimed:,}, summarizer {led.summarizer:,}, "
        f"redone {led.redone:,}, net {led.net:,}"
    )
    for row in led.rows:
        r = row.redone
        if r is not None and r.calls:
            tools = ", ".join(r.tools)
            yield (
                f"  redone after turn {row.turn}: {counted(r.calls, 'repeated call')}, "
                f"{r.tokens:,} tokens in {r.horizon_turns} calls ({tools})"
            )
    base = led.baseline.mean_tokens if led.baseline is not None else None
    if base is not None:
        yield f"  baseline (tokens)      {base:,.0f} redone per horizon after an ordinary point"


def _templates(conv: ConversationReport) -> Iterator[str]:
    """Which template the summaries were judged against (docs/detectors.md#summary_schema_coverage),
    saying so where none is known: those are not judged."""
    names = Counter(c.record.summary_template for c in conv.compactions)
    names.pop(None, None)
    if not names:
        return
    listed = ", ".join(f"{name} {count}" for name, count in sorted(names.items()) if name)
    unknown = " (unknown: no template known, not judged)" if "unknown" in names else ""
    yield f"  summary templates      {listed}{unknown}"


def _list(values: list[int]) -> str:
    if len(values) <= MAX_LISTED:
        return " ".join(str(v) for v in values)
    head = " ".join(str(v) for v in values[: MAX_LISTED // 2])
    tail = " ".join(str(v) for v in values[-MAX_LISTED // 2 :])
    return f"{head} ... {tail}"


def counted(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: a count and its noun, plural when it is not one."""
    return f"{count} {noun}" + ("" if count == 1 else "s")
