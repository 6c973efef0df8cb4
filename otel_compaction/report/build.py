"""Running the engine over input files and collecting what it said into a report.

Agent transcripts are replayed through a ``ConversationRegistry`` as they are
read; OTLP/JSON trace and log files go through the OTLP library's
``ConversationState`` (the same extraction, de-duplication, ordering and engine as
the processor service), all of their spans and log records first, so a
conversation split over several files is put back in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import SERVICE_NAME

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import (
    CompactionAnalysis,
    Rediscovery,
    RediscoveryBaseline,
    TurnAnalysis,
)
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.agent_tools import AgentTools
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import Item, spans_to_items
from otel_compaction.otlp.state import Applied, ConversationState
from otel_compaction.report.model import ConversationReport, FileReport, FindingsReport
from otel_compaction.report.sample import TurnSample
from otel_compaction.transcripts import (
    TRANSCRIPT_FORMATS,
    Continuation,
    ConversationInfo,
    Diagnostics,
    Format,
    Progress,
    RecordLedger,
    Replayer,
    Step,
    TranscriptError,
    UniqueConversations,
    detect_format,
    read_transcript,
)
from otel_compaction.transcripts.detect import starts_like_otlp, starts_like_otlp_logs
from otel_compaction.transcripts.otlp import read_otlp_requests

SUBAGENTS_DIRECTORY = "subagents"
"""Where Claude Code keeps a session's sub-agent transcripts: read after the sessions."""

INPUT_SUFFIXES = (".jsonl", ".json", ".ndjson")
"""Files taken from a directory given as input (recursively)."""


@dataclass(slots=True)
class _Conversation:
    info: ConversationInfo
    turns: TurnSample = field(default_factory=TurnSample)
    compactions: list[CompactionAnalysis] = field(default_factory=list)
    rediscovery: list[Rediscovery] = field(default_factory=list)
    baseline: RediscoveryBaseline | None = None


class ReportBuilder:
    """Collects the engine's analyses per conversation, in order of first appearance."""

    def __init__(self) -> None:
        self._conversations: dict[str, _Conversation] = {}

    def announce(self, info: ConversationInfo) -> None:
        """Register a conversation (the first announcement of an id wins)."""
        if info.conversation_id not in self._conversations:
            self._conversations[info.conversation_id] = _Conversation(info)

    def known(self, conversation_id: str) -> bool:
        """Whether the conversation was announced."""
        return conversation_id in self._conversations

    def add_turn(self, analysis: TurnAnalysis) -> None:
        """Record a turn's signals."""
        self._get(analysis.conversation_id).turns.add(analysis)

    def add_compaction(self, analysis: CompactionAnalysis) -> None:
        """Record a compaction with its lineage, cycle and findings."""
        conversation = self._get(analysis.record.conversation_id)
        conversation.compactions.append(analysis)
        conversation.turns.mark_compaction()

    def take(self, step: Step | Applied) -> None:
        """Record whatever the engine returned for one input."""
        if step.turn is not None:
            if step.turn.settled is not None:
                self.settle(step.turn.settled)
            self.add_turn(step.turn)
            if step.turn.rediscovered:
                self.add_rediscovery(step.turn.conversation_id, step.turn.rediscovered)
        if step.compaction is not None:
            if step.compaction.settled is not None:
                self.settle(step.compaction.settled)
            self.add_compaction(step.compaction)

    def add_rediscovery(self, conversation_id: str, results: tuple[Rediscovery, ...]) -> None:
        """Record what compactions' rediscovery horizons measured."""
        self._get(conversation_id).rediscovery.extend(results)

    def end_rediscovery(self, registry: ConversationRegistry) -> None:
        """The end of the input: every conversation's open horizons, cut short, and its
        baseline."""
        for conversation_id in registry.ids():
            analyzer = registry.peek(conversation_id)
            if analyzer is None or conversation_id not in self._conversations:
                continue
            self.add_rediscovery(conversation_id, analyzer.finish_rediscovery())
            self._conversations[conversation_id].baseline = analyzer.rediscovery_baseline

    def settle(self, settled: CompactionAnalysis) -> None:
        """Complete a recorded compaction with its settlement (size after, late findings)."""
        compactions = self._get(settled.record.conversation_id).compactions
        cid = settled.record.compaction_id
        for index in range(len(compactions) - 1, -1, -1):
            if compactions[index].record.compaction_id == cid:
                compactions[index] = compactions[index].merged(settled)
                return

    def build(
        self,
        files: Sequence[FileReport] = (),
        diagnostics: Diagnostics | None = None,
        continuations: Sequence[Continuation] = (),
    ) -> FindingsReport:
        """The report of everything recorded."""
        conversations = tuple(
            ConversationReport(
                conversation_id=cid,
                turns=c.turns.turns(),
                compactions=tuple(c.compactions),
                agent=c.info.agent,
                source=c.info.source,
                counted_turns=c.turns.last_index,
                turn_peak=c.turns.peak,
                rediscovery=tuple(c.rediscovery),
                rediscovery_baseline=c.baseline,
            )
            for cid, c in self._conversations.items()
        )
        diag = diagnostics or Diagnostics()
        return FindingsReport(
            conversations=conversations,
            files=tuple(files),
            skipped=tuple(diag.skipped),
            skipped_count=diag.skipped_count,
            skipped_by_reason=tuple(diag.by_reason.items()),
            skipped_first=tuple(diag.first_by_reason.items()),
            skipped_by_file=tuple(diag.by_file.items()),
            continuations=tuple(continuations),
        )

    def _get(self, conversation_id: str) -> _Conversation:
        found = self._conversations.get(conversation_id)
        if found is None:
            found = self._conversations[conversation_id] = _Conversation(
                ConversationInfo(conversation_id)
            )
        return found


def expand_inputs(paths: Iterable[Path]) -> list[Path]:
    """The files to read: files as given, directories searched for JSON Lines files."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in INPUT_SUFFIXES))
        else:
            out.append(path)
    return out


def total_size(paths: Iterable[Path]) -> int:
    """The bytes to read, for progress (unreadable files count 0)."""
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def analyze_files(
    paths: Sequence[Path],
    settings: Settings | None = None,
    diagnostics: Diagnostics | None = None,
    progress: Progress | None = None,
) -> FindingsReport:
    """Analyze transcripts and trace files with the shared engine; never raises for bad input.

    A file that cannot be read at all is listed in ``FindingsReport.unreadable``
    with the reason; a malformed line is listed in ``skipped``.
    """
    settings = settings or Settings.from_env()
    diagnostics = diagnostics or Diagnostics()
    run = _Run(settings, diagnostics, progress)
    # Sessions before their sub-agents' transcripts (Claude Code's ``<session>/subagents/``):
    # a compaction sub-agent starts with a copy of its session, which must stay the session's.
    order = sorted(range(len(paths)), key=lambda i: SUBAGENTS_DIRECTORY in paths[i].parts)
    read = {i: run.read(paths[i]) for i in order}
    files = [read[i] for i in range(len(paths))]
    for applied in run.otlp.drain():
        run.builder.take(applied)
    # Compactions no call followed are judged now, their size after unknown.
    for settled in (*run.replayer.registry.finish(), *run.otlp.registry.finish()):
        run.builder.settle(settled)
    for registry in (run.replayer.registry, run.otlp.registry):
        run.builder.end_rediscovery(registry)
    if progress is not None:
        progress.finish()
    return run.builder.build(files, diagnostics, run.ledger.continuations())


class _Run:
    """The state of one ``analyze_files`` call."""

    def __init__(
        self, settings: Settings, diagnostics: Diagnostics, progress: Progress | None
    ) -> None:
        self.settings = settings
        self.diagnostics = diagnostics
        self.progress = progress
        self.builder = ReportBuilder()
        self.replayer = Replayer(ConversationRegistry(settings))
        self.otlp = ConversationState(settings, window=0.0)
        self.agent_tools = AgentTools(settings.max_conversations)
        self.unique = UniqueConversations()
        self.ledger = RecordLedger()

    def read(self, path: Path) -> FileReport:
        if self.progress is not None:
            self.progress.start_file(path.name)
        try:
            fmt = detect_format(path)
            if fmt is Format.UNKNOWN and starts_like_otlp(path):
                fmt = Format.OTLP  # no request decodes, but it is OTLP: say why, line by line
            if fmt is Format.UNKNOWN and starts_like_otlp_logs(path):
                fmt = Format.OTLP_LOGS
            if fmt is Format.OTLP:
                self._read_otlp(path)
            elif fmt is Format.OTLP_LOGS:
                self._read_otlp_logs(path)
            elif fmt in TRANSCRIPT_FORMATS:
                self._read_transcript(path, fmt)
            elif fmt is Format.UNKNOWN:
                raise TranscriptError(
                    path,
                    "not OTLP/JSON traces or logs, a Claude Code transcript or a Codex rollout",
                )
        except TranscriptError as exc:
            return FileReport(str(path), Format.UNKNOWN.value, exc.reason)
        return FileReport(str(path), fmt.value)

    def _read_otlp(self, path: Path) -> None:
        items: list[Item] = []
        windows = self.settings.model_windows
        for request in read_otlp_requests(path, self.diagnostics, self.progress):
            names = [_service_name(rs) for rs in request.resource_spans]
            read = list(spans_to_items(request, windows))
            self.otlp.place(read)  # calls no key holds get their conversation first
            for item in read:
                agent = names[item.position[0]] if item.position is not None else None
                self.builder.announce(
                    ConversationInfo(item.conversation_id, agent=agent, source=str(path))
                )
                items.append(item)
        self.otlp.offer(items)

    def _read_otlp_logs(self, path: Path) -> None:
        """An agent's own log events (Claude Code's, Codex's), read as the processor does."""
        items: list[Item] = []
        for request in read_otlp_requests(path, self.diagnostics, self.progress, Signal.LOGS):
            for resource_logs in request.resource_logs:
                agent = _service_name(resource_logs)
                for item in logs_to_items(_OneResource(resource_logs), self.agent_tools):
                    self.builder.announce(
                        ConversationInfo(item.conversation_id, agent=agent, source=str(path))
                    )
                    items.append(item)
        self.otlp.offer(items)

    def _read_transcript(self, path: Path, fmt: Format) -> None:
        self.unique.start_file(path.name)
        for raw in read_transcript(path, fmt, self.diagnostics, self.progress, self.ledger):
            event = self.unique.rename(raw)
            if isinstance(event, ConversationInfo):
                self.builder.announce(event)
            else:
                self.builder.take(self.replayer.feed(event))


class _OneResource:
    """A logs request of one ``ResourceLogs`` (so each item's resource is known)."""

    __slots__ = ("resource_logs",)

    def __init__(self, resource_logs: Any) -> None:
        self.resource_logs = (resource_logs,)


def _service_name(resource_spans: Any) -> str | None:
    """The ``service.name`` of a resource, unless it is the SDK's ``unknown_service`` default."""
    for kv in resource_spans.resource.attributes:
        if kv.key == SERVICE_NAME:
            name = kv.value.string_value
            return name if name and not name.startswith("unknown_service") else None
    return None
