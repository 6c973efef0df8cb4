"""Writing spans in the Collector file exporter's format: one OTLP/JSON request per line.

:class:`OtlpJsonFileExporter` is an OTel SDK ``SpanExporter``; each ``export``
call appends one ``ExportTraceServiceRequest`` line (hex ids, as OTLP/JSON
requires), which ``otel-compaction analyze`` and the Collector's ``otlpjsonfile``
receiver read back.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_compaction.otlp.decode import encode_json

logger = logging.getLogger(__name__)


class OtlpJsonFileExporter(SpanExporter):
    """Appends each batch of spans to a file as one OTLP/JSON line.

    Args:
        path: the file to write (created, or truncated unless ``append``).
        append: add to an existing file instead of replacing it.

    Raises:
        OSError: the file cannot be opened for writing (raised here, at once,
            rather than on the first export).
    """

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self._path = Path(path)
        self._handle: IO[str] | None = self._path.open("a" if append else "w", encoding="utf-8")
        self._lock = threading.Lock()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one line holding ``spans``."""
        if not spans:
            return SpanExportResult.SUCCESS
        line = json.dumps(encode_json(encode_spans(spans)), separators=(",", ":"))
        with self._lock:
            if self._handle is None:
                return SpanExportResult.FAILURE  # already shut down
            try:
                self._handle.write(line + "\n")
            except OSError:
                logger.exception("cannot write spans to %s", self._path)
                return SpanExportResult.FAILURE
            self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the file's buffer."""
        with self._lock:
            if self._handle is not None:
                self._handle.flush()
        return True

    def shutdown(self) -> None:
        """Close the file."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
