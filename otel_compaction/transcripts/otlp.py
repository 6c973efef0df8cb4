"""OTLP/JSON trace and log files: the Collector's file exporter format, read with the
same OTLP library as the processor service.

Each line is one ``ExportTraceServiceRequest`` (or, in a log file, one
``ExportLogsServiceRequest``: an agent's own events, as Claude Code's and Codex's
OTLP log exporters send them) in OTLP/JSON (hex ids); a file holding one
pretty-printed request is read too. Decoding is the processor's
(``otlp.decode.parse_json``) and so is the mapping to engine inputs
(``otlp.extract.spans_to_items``, ``otlp.agent_events.logs_to_items``):
``analyze`` on a file and the processor service reach their verdicts from exactly
the same reading.

Tool categories recorded on a span (``compaction.turn.tool_categories``, decided
where the arguments were known) are read by the processor's mapping and used by
the phase filter as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from google.protobuf.message import Message

from otel_compaction.otlp.decode import DecodeError, Signal, parse_json
from otel_compaction.otlp.extract import Item, spans_to_items
from otel_compaction.transcripts.lines import Diagnostics, read_document, read_raw_lines
from otel_compaction.transcripts.progress import Progress


def read_otlp(
    path: Path,
    diagnostics: Diagnostics,
    progress: Progress | None = None,
    model_windows: Mapping[str, int] | None = None,
) -> Iterator[Item]:
    """The engine inputs of every span in an OTLP/JSON file, in file order."""
    for request in read_otlp_requests(path, diagnostics, progress):
        yield from _items(request, model_windows)


def read_otlp_requests(
    path: Path,
    diagnostics: Diagnostics,
    progress: Progress | None = None,
    signal: Signal = Signal.TRACES,
) -> Iterator[Message]:
    """Every request of ``signal`` in an OTLP/JSON file, in file order.

    A line that is not one is reported in ``diagnostics`` and skipped (a request of
    the other signal too: a file holds one); a file holding one pretty-printed
    request gives that request.
    """
    first = True
    for lineno, raw in read_raw_lines(path, diagnostics, progress):
        try:
            request = parse_json(signal, raw)
        except DecodeError as exc:
            if first and raw.lstrip().startswith(b"{"):
                whole = _whole_document(path, signal)
                if whole is not None:
                    yield whole
                    return
            diagnostics.skip(path, lineno, _why(raw, exc.reason))
            continue
        finally:
            first = False
        if not request.ListFields() and _OTHER_SIGNAL[signal].search(raw[:4096]):
            diagnostics.skip(path, lineno, f"not an OTLP/JSON {signal.spec.name} request")
            continue
        yield request


def _why(raw: bytes, reason: str) -> str:
    """A line that stops inside its JSON is said to be truncated, with where it stops."""
    text = raw.rstrip()
    if not is_cut_short(text):
        return reason
    return (
        f"truncated OTLP/JSON: the request stops after {len(text)} bytes of the line, "
        f"inside its JSON (the file was cut, or is still being written)"
    )


def is_cut_short(text: bytes) -> bool:
    """Whether JSON text ends inside a string, an object or an array (a cut-off prefix)."""
    bare = _STRING.sub(b"", text)  # complete strings out: what is left is structure
    if b'"' in bare:
        return True  # a string that never closes
    opened = bare.count(b"{") + bare.count(b"[")
    return opened > bare.count(b"}") + bare.count(b"]")


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OTHER_SIGNAL = {
    Signal.TRACES: re.compile(rb'"(resourceLogs|resource_logs|resourceMetrics|resource_metrics)"'),
    Signal.LOGS: re.compile(rb'"(resourceSpans|resource_spans|resourceMetrics|resource_metrics)"'),
    Signal.METRICS: re.compile(rb'"(resourceSpans|resource_spans|resourceLogs|resource_logs)"'),
}


def _whole_document(path: Path, signal: Signal) -> Message | None:
    """The file as one pretty-printed request, or None when it is not one."""
    data = read_document(path)
    if data is None:
        return None
    try:
        request: Message = parse_json(signal, data)
        return request
    except DecodeError:
        return None


def _items(request: object, model_windows: Mapping[str, int] | None) -> Iterator[Item]:
    yield from spans_to_items(request, model_windows)
