"""Reading agent transcripts and trace files into the engine's inputs.

::

    fmt = detect_format(path)                       # by content, not by name
    for event in read_transcript(path, fmt, Diagnostics()):
        replayer.feed(event)                        # Claude Code and Codex transcripts

OTLP/JSON trace files are read with :func:`read_otlp` into the OTLP library's
items (``otlp.extract.Item``), because ``analyze`` applies them exactly
as the processor service does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from otel_compaction.transcripts.claude_code import read_claude_code
from otel_compaction.transcripts.codex import read_codex
from otel_compaction.transcripts.detect import Format, detect_format
from otel_compaction.transcripts.events import (
    CallInfo,
    CompactionEvent,
    ConversationInfo,
    Event,
    PhaseEvent,
    TurnEvent,
)
from otel_compaction.transcripts.ledger import Continuation, RecordLedger
from otel_compaction.transcripts.lines import Diagnostics, SkippedLine, TranscriptError
from otel_compaction.transcripts.otlp import read_otlp
from otel_compaction.transcripts.progress import Progress
from otel_compaction.transcripts.replay import Replayer, Step, UniqueConversations

TRANSCRIPT_FORMATS = (Format.CLAUDE_CODE, Format.CODEX)


def read_transcript(
    path: Path,
    fmt: Format,
    diagnostics: Diagnostics,
    progress: Progress | None = None,
    ledger: RecordLedger | None = None,
) -> Iterator[Event]:
    """The events of a Claude Code or Codex transcript; ``ledger``, shared by the files of
    one run, makes a Claude Code record repeated in another file read once.

    Raises:
        TranscriptError: the file cannot be read, or ``fmt`` is not a transcript format.
    """
    if fmt is Format.CLAUDE_CODE:
        return read_claude_code(path, diagnostics, progress, ledger)
    if fmt is Format.CODEX:
        return read_codex(path, diagnostics, progress)
    raise TranscriptError(path, f"not an agent transcript (format {fmt.value})")


__all__ = [
    "TRANSCRIPT_FORMATS",
    "CallInfo",
    "CompactionEvent",
    "Continuation",
    "ConversationInfo",
    "Diagnostics",
    "Event",
    "Format",
    "PhaseEvent",
    "Progress",
    "RecordLedger",
    "Replayer",
    "SkippedLine",
    "Step",
    "TranscriptError",
    "TurnEvent",
    "UniqueConversations",
    "detect_format",
    "read_otlp",
    "read_transcript",
]
