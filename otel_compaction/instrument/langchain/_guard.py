"""The handler's guard: its own errors never reach LangChain.

Every callback body runs inside ``CallbackGuard``: the handler's lock is held,
and an ``Exception`` raised by our code is swallowed, counted in
``compaction.instrumentation.errors`` (stage ``callback``) and logged: once per
callback as a warning naming the error's class (no traceback), and every time
at debug level with the traceback.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from otel_compaction.emit.metrics import CompactionMetrics

logger = logging.getLogger("otel_compaction.instrument.langchain")

ERROR_STAGE = "callback"


class ErrorLog:
    """Counts and logs the handler's internal errors (thread-safe under the handler lock)."""

    __slots__ = ("_logged", "_metrics", "errors")

    def __init__(self, metrics: CompactionMetrics) -> None:
        self._metrics = metrics
        self._logged: set[str] = set()
        self.errors = 0

    def failed(self, callback: str, exc: Exception) -> None:
        """Record that ``callback`` raised ``exc`` (and was swallowed)."""
        self.errors += 1
        try:
            self._metrics.record_error(ERROR_STAGE)
        except Exception:  # counting must not raise either
            logger.debug("could not count a callback error", exc_info=True)
        if callback not in self._logged:
            self._logged.add(callback)
            # No traceback in the host's log by default: it is one DEBUG line away.
            logger.warning(
                "otel-compaction's LangChain %s failed (%s); the agent goes on (logged once; "
                "every failure, with its traceback, is logged at debug level on %s)",
                callback, type(exc).__name__, logger.name,
            )  # fmt: skip
        logger.debug("otel-compaction %s failed", callback, exc_info=exc)


class CallbackGuard:
    """``with CallbackGuard(lock, log, "on_llm_end"):`` around one callback body."""

    __slots__ = ("_lock", "_log", "_name")

    def __init__(self, lock: threading.RLock, log: ErrorLog, name: str) -> None:
        self._lock = lock
        self._log = log
        self._name = name

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self._lock.release()
        if exc is None or not isinstance(exc, Exception):
            return False
        self._log.failed(self._name, exc)
        return True
