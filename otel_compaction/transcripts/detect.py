"""Which format a file is in, decided by its content (the first valid lines), not its name.

Recognised:

- ``otlp``: OTLP/JSON, one ``ExportTraceServiceRequest`` per line (the
  Collector's file exporter), or one such document pretty-printed over the
  whole file; an object with ``resourceSpans``;
- ``otlp-logs``: the same with ``ExportLogsServiceRequest`` (``resourceLogs``): an
  agent's own log events (Claude Code's, Codex's), as its OTLP log exporter sent them;
- ``codex``: Codex CLI rollouts, lines ``{"timestamp", "type", "payload"}`` with
  ``type`` one of ``session_meta``, ``response_item``, ``turn_context``,
  ``event_msg``, ``compacted``;
- ``claude-code``: Claude Code session transcripts, lines with ``type``
  ``user``, ``assistant``, ``system``, ``summary``... and a ``sessionId`` or
  ``uuid``.

An empty file is ``empty``; a file none of the first lines of which is decisive
is ``unknown``.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any

from otel_compaction.transcripts.lines import (
    MAX_DOCUMENT_BYTES,
    bounded_lines,
    open_regular,
    parse_line,
    read_document,
)

LINES_TO_TRY = 50
"""How many non-blank lines are looked at before giving up."""

CODEX_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
CLAUDE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"}
)


class Format(enum.StrEnum):
    """A transcript or trace file format."""

    OTLP = "otlp"
    OTLP_LOGS = "otlp-logs"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    EMPTY = "empty"
    UNKNOWN = "unknown"


def classify_record(record: dict[str, Any]) -> Format | None:
    """The format one JSON object belongs to, or None when it does not tell."""
    if "resourceSpans" in record or "resource_spans" in record:
        return Format.OTLP
    if "resourceLogs" in record or "resource_logs" in record:
        return Format.OTLP_LOGS
    kind = record.get("type")
    if kind in CODEX_TYPES and "payload" in record:
        return Format.CODEX
    if isinstance(kind, str) and ("sessionId" in record or "uuid" in record):
        return Format.CLAUDE_CODE
    if kind in CLAUDE_TYPES and ("message" in record or "leafUuid" in record):
        return Format.CLAUDE_CODE
    return None


def detect_format(path: Path) -> Format:
    """The format of the file at ``path``.

    Raises:
        TranscriptError: the file cannot be opened, or is not a regular file.
    """
    seen = 0
    first_char = ""
    with open_regular(path) as handle:
        for raw in bounded_lines(handle):
            if isinstance(raw, int):
                seen += 1  # a line too long to read: no verdict from it
                continue
            value, error = parse_line(raw)
            if value is None and error is None:
                continue
            if not first_char:
                first_char = raw.lstrip()[:1].decode("ascii", "replace")
            seen += 1
            if value is not None:
                found = classify_record(value)
                if found is not None:
                    return found
            if seen >= LINES_TO_TRY:
                break
    if seen == 0:
        return Format.EMPTY
    if first_char == "{":
        return whole_file_otlp(path) or Format.UNKNOWN
    return Format.UNKNOWN


def whole_file_otlp(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> Format | None:
    """``OTLP`` or ``OTLP_LOGS`` when the file is one pretty-printed OTLP/JSON document
    (small enough to load), else None."""
    data = read_document(path, limit)
    if data is None:
        return None
    value, _ = parse_line(data)
    found = classify_record(value) if value is not None else None
    return found if found in (Format.OTLP, Format.OTLP_LOGS) else None


_OTLP_START = re.compile(rb'\A\s*\{\s*"(resourceSpans|resource_spans)"\s*:')
_OTLP_LOGS_START = re.compile(rb'\A\s*\{\s*"(resourceLogs|resource_logs)"\s*:')


def starts_like_otlp(path: Path) -> bool:
    """Whether the file opens like an OTLP/JSON request, decodable or not.

    A file whose only request is cut short has no decisive line, so
    :func:`detect_format` calls it ``unknown``; this tells such a file apart
    from one that is not OTLP at all, so that its lines can be reported as
    truncated OTLP.
    """
    return _starts(path, _OTLP_START)


def starts_like_otlp_logs(path: Path) -> bool:
    """:func:`starts_like_otlp` for an ``ExportLogsServiceRequest``."""
    return _starts(path, _OTLP_LOGS_START)


def _starts(path: Path, pattern: re.Pattern[bytes]) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return pattern.match(head) is not None
