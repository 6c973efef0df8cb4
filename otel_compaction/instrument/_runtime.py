"""The process-wide state of the instrumentation: analysis, telemetry, small memories.

One :class:`Runtime` exists while the instrumentation is on (``install`` at
``instrument()``, ``uninstall`` at ``uninstrument()``); the public API
(``report_phase``, ``record_compaction``...) also works without it, on a default
runtime bound to the global tracer and meter providers. The LangChain handler
shares the same runtime, so both layers feed the same conversations.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanContext, TracerProvider

from otel_compaction._bounded import BoundedMap
from otel_compaction.config import Settings
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.engine import ConversationRegistry
from otel_compaction.instrument._ambient import process_tracker
from otel_compaction.instrument._guard import Guard
from otel_compaction.model import CompactionAnalysis, Finding
from otel_compaction.semconv import SCHEMA_URL, ErrorStage
from otel_compaction.version import __version__

logger = logging.getLogger("otel_compaction.instrument")

SCOPE = "otel_compaction"
"""The instrumentation scope name of every span and metric we emit."""
SPAN_MEMORY = 4096
"""Compaction span contexts remembered for lineage links; response ids for chaining."""


class UnsettledSpans:
    """Compaction spans kept open until the first call after the compaction settles them.

    A compaction recorded before that call (``record_compaction`` in a
    ``conversation()``, a LangChain summarization) does not know its size after yet; its
    span stays open, so the call that measures it can add ``compaction.tokens.after`` and
    the findings that needed it, then end it at the time it was recorded. Bounded: the
    oldest is ended as it is beyond ``limit``; :meth:`close_all` ends the rest (at
    ``uninstrument()`` and at exit).
    """

    __slots__ = ("_held",)

    def __init__(self, limit: int = 1024) -> None:
        self._held: BoundedMap[str, tuple[Any, int | None, Any]] = BoundedMap(limit)

    def hold(self, compaction_id: str, span: Any, end_ns: int | None, analysis: Any) -> None:
        """Keep ``span`` open for ``compaction_id``, with its end time and analysis."""
        for span_, end, _ in self._held.put(compaction_id, (span, end_ns, analysis)):
            span_.end(end_time=end)

    def take(self, compaction_id: str) -> tuple[Any, int | None, Any] | None:
        """Remove and return what is held for ``compaction_id``."""
        return self._held.pop(compaction_id)

    def close_all(self) -> None:
        """End every held span as it is (its size after never came)."""
        for span, end_ns, _ in self._held.drain():
            span.end(end_time=end_ns)

    def __len__(self) -> int:
        return len(self._held)


class Runtime:
    """Settings, the conversation registry, the history tracker and the telemetry.

    Args:
        settings: thresholds and switches.
        tracer_provider / meter_provider: where spans and metrics go (the global
            providers when None).
        on_finding: called with every finding (in the thread of the LLM call).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        on_finding: Callable[[Finding], None] | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.registry = ConversationRegistry(self.settings)
        self.history = process_tracker(
            self.settings.conversation_idle_seconds,
            self.settings.history_max_chars,
            self._at_pressure,
        )
        self.tracer = trace.get_tracer(
            SCOPE, __version__, tracer_provider=tracer_provider, schema_url=SCHEMA_URL
        )
        meter = metrics.get_meter(
            SCOPE, __version__, meter_provider=meter_provider, schema_url=SCHEMA_URL
        )
        self.metrics = CompactionMetrics(
            meter, livelocked=self.registry.livelocked_count, active=self.registry.__len__
        )
        self.guard = Guard(self.metrics)
        self.compaction_spans: BoundedMap[str, SpanContext] = BoundedMap(SPAN_MEMORY)
        self.unsettled = UnsettledSpans()
        self.closers: list[Callable[[Runtime], None]] = []
        """Called at exit and at ``uninstrument()`` (the emit layer's last words)."""
        self.response_conversations: BoundedMap[str, tuple[str, bool]] = BoundedMap(SPAN_MEMORY)
        self.cleared: BoundedMap[str, int] = BoundedMap(SPAN_MEMORY)
        self.enriched: BoundedMap[int, bool] = BoundedMap(SPAN_MEMORY)
        if on_finding is not None:
            self.registry.add_listener(on_finding)
        self.emit_ended: Callable[[CompactionAnalysis], None] | None = None
        """Emits what the end of the runs found (set by the instrumentor: the span code
        imports this module)."""

    def _at_pressure(self, conversation_id: str, tokens: int) -> bool:
        """Whether the conversation's last turn's context plus ``tokens`` reaches the
        pressure threshold of its window."""
        analyzer = self.registry.peek(conversation_id)
        pressure = analyzer.pressure if analyzer is not None else None
        if pressure is None or pressure.window <= 0:
            return False
        fraction = (pressure.context_tokens + tokens) / pressure.window
        return fraction >= self.settings.pressure_threshold


_lock = threading.Lock()
_current: Runtime | None = None


def install(runtime: Runtime) -> None:
    """Make ``runtime`` the process's runtime (at ``instrument()``)."""
    global _current
    with _lock:
        _current = runtime
    atexit.unregister(_close_at_exit)  # once, and after the latest tracer provider
    atexit.register(_close_at_exit)


def uninstall() -> None:
    """Forget the runtime (at ``uninstrument()``): state starts afresh next time."""
    global _current
    with _lock:
        runtime, _current = _current, None
    if runtime is not None:
        _close(runtime)


def _close(runtime: Runtime) -> None:
    end_runs(runtime)
    runtime.unsettled.close_all()
    for closer in runtime.closers:
        closer(runtime)


def end_runs(runtime: Runtime) -> None:
    """Every tracked conversation's run has ended (the instrumentation closes, the process
    exits): judge what only the run's end decides (a short run), and the compactions no
    call followed, and hand what that found to ``runtime.emit_ended``. Never raises."""
    emit = runtime.emit_ended
    with runtime.guard.stage(ErrorStage.ANALYSIS):
        for analysis in runtime.registry.finish():
            if emit is not None:
                emit(analysis)


def _close_at_exit() -> None:
    # Registered at instrument() time, after the tracer provider (which registers its own
    # shutdown when it is built): atexit runs the latest registration first, so the held
    # spans end before the provider's last export.
    runtime = _current
    if runtime is not None:
        try:
            _close(runtime)
        except Exception:  # never break the host, even at exit
            logger.debug("closing unsettled compaction spans failed", exc_info=True)


def current() -> Runtime | None:
    """The installed runtime, if any."""
    return _current


def get_runtime() -> Runtime:
    """The installed runtime, or a default one on the global providers."""
    global _current
    runtime = _current
    if runtime is not None:
        return runtime
    with _lock:
        if _current is None:
            _current = Runtime()
        return _current


def guard() -> Guard:
    """The installed runtime's guard, or a fallback that only logs."""
    runtime = _current
    return runtime.guard if runtime is not None else _FALLBACK


_FALLBACK = Guard()
