"""``otel-compaction import``: transcripts replayed through the engine and exported as OTLP spans.

Spans are exported synchronously in batches (:class:`BlockingBatchProcessor`):
an import never drops a span because an exporter queue filled up, and a batch
the backend refused is counted and reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import TurnAnalysis
from otel_compaction.semconv import SCHEMA_URL
from otel_compaction.transcripts import read_transcript
from otel_compaction.transcripts.detect import Format, detect_format
from otel_compaction.transcripts.events import CompactionEvent, ConversationInfo, TurnEvent
from otel_compaction.transcripts.lines import Diagnostics, TranscriptError
from otel_compaction.transcripts.progress import Progress
from otel_compaction.transcripts.replay import Replayer, UniqueConversations
from otel_compaction.transcripts.spans import SpanWriter

DEFAULT_SERVICE_NAME = "otel-compaction-import"
BATCH_SIZE = 512


class BlockingBatchProcessor(SpanProcessor):
    """Exports ended spans in batches of ``batch_size``, on the caller's thread.

    ``failed`` counts the spans of batches the exporter did not accept.
    """

    def __init__(self, exporter: SpanExporter, batch_size: int = BATCH_SIZE) -> None:
        self._exporter = exporter
        self._batch_size = batch_size
        self._batch: list[ReadableSpan] = []
        self.exported = 0
        self.failed = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the span; export when the batch is full."""
        self._batch.append(span)
        if len(self._batch) >= self._batch_size:
            self._flush()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued."""
        self._flush()
        return self.failed == 0

    def shutdown(self) -> None:
        """Export what is queued and shut the exporter down."""
        self._flush()
        self._exporter.shutdown()

    def _flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        if self._exporter.export(batch) is SpanExportResult.SUCCESS:
            self.exported += len(batch)
        else:
            self.failed += len(batch)


@dataclass(slots=True)
class ImportResult:
    """What an import did."""

    files: int = 0
    conversations: int = 0
    turns: int = 0
    compactions: int = 0
    spans_exported: int = 0
    spans_failed: int = 0
    replayed_files: int = 0
    errors: list[TranscriptError] = field(default_factory=list)


Replay = Callable[[Path], tuple[int, int]]
"""Sends an OTLP/JSON file's requests on as they are: (spans accepted, spans not accepted)."""


def import_files(
    paths: Sequence[Path],
    exporter: SpanExporter,
    settings: Settings | None = None,
    diagnostics: Diagnostics | None = None,
    progress: Progress | None = None,
    service_name: str = DEFAULT_SERVICE_NAME,
    replay: Replay | None = None,
) -> ImportResult:
    """Replay transcripts through the engine and export their spans with ``exporter``.

    OTLP/JSON trace files are already spans: with ``replay`` they are handed to it
    (sent on unchanged), without it they are an error that says so.
    """
    settings = settings or Settings.from_env()
    diagnostics = diagnostics or Diagnostics()
    processor = BlockingBatchProcessor(exporter)
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: service_name}), sampler=ALWAYS_ON
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(__name__, schema_url=SCHEMA_URL)
    writer = SpanWriter(tracer, settings, time.time_ns())
    result = ImportResult()
    replayer = Replayer(ConversationRegistry(settings))
    unique = UniqueConversations()
    try:
        for path in paths:
            if replay is not None and _replayed(path, replay, result):
                continue
            _import_file(path, replayer, unique, writer, result, diagnostics, progress)
        for settled in replayer.registry.finish():
            writer.settle(settled)
        _finish_rediscovery(replayer.registry, writer)
    finally:
        writer.close()
        provider.shutdown()
        if progress is not None:
            progress.finish()
    result.spans_exported += processor.exported
    result.spans_failed += processor.failed
    return result


def _rediscovered(
    registry: ConversationRegistry, writer: SpanWriter, conversation_id: str, turn: TurnAnalysis
) -> None:
    """The rediscovery spans of the horizons a call closed (as the instrumentation does)."""
    analyzer = registry.peek(conversation_id)
    baseline = analyzer.rediscovery_baseline if analyzer is not None else None
    writer.rediscovered(conversation_id, turn.rediscovered, baseline)


def _finish_rediscovery(registry: ConversationRegistry, writer: SpanWriter) -> None:
    """The end of input: every horizon still open, cut short (``close_rediscovery`` at exit)."""
    for conversation_id in registry.ids():
        analyzer = registry.peek(conversation_id)
        if analyzer is None:
            continue
        results = analyzer.finish_rediscovery()
        if results:
            writer.rediscovered(conversation_id, results, analyzer.rediscovery_baseline)


def _replayed(path: Path, replay: Replay, result: ImportResult) -> bool:
    """Replay ``path`` if it is an OTLP/JSON file; whether it was one."""
    try:
        if detect_format(path) is not Format.OTLP:
            return False
        sent, failed = replay(path)
    except TranscriptError as exc:
        result.errors.append(exc)
        return True
    result.files += 1
    result.replayed_files += 1
    result.spans_exported += sent
    result.spans_failed += failed
    return True


def _import_file(
    path: Path,
    replayer: Replayer,
    unique: UniqueConversations,
    writer: SpanWriter,
    result: ImportResult,
    diagnostics: Diagnostics,
    progress: Progress | None,
) -> None:
    if progress is not None:
        progress.start_file(path.name)
    try:
        fmt = detect_format(path)
        if fmt is Format.EMPTY:
            result.files += 1
            return
        if fmt is Format.OTLP:
            raise TranscriptError(
                path, "already OTLP/JSON spans: nothing to convert (--otlp-endpoint replays it)"
            )
        if fmt is Format.OTLP_LOGS:
            raise TranscriptError(
                path,
                "OTLP/JSON log records (an agent's own events): `otel-compaction analyze` "
                "reads them, and the processor takes them on its logs pipeline",
            )
        unique.start_file(path.name)
        for raw in read_transcript(path, fmt, diagnostics, progress):
            event = unique.rename(raw)
            result.conversations += isinstance(event, ConversationInfo)
            result.turns += isinstance(event, TurnEvent)
            result.compactions += isinstance(event, CompactionEvent)
            step = replayer.feed(event)
            writer.write(step)
            if step.turn is not None and step.turn.rediscovered:
                _rediscovered(replayer.registry, writer, event.conversation_id, step.turn)
        result.files += 1
    except TranscriptError as exc:
        result.errors.append(exc)
