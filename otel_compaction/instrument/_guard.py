"""The one error guard of the instrumentation: our errors never reach the host.

Every stage of the instrumentation (request, response, stream, compaction...) and
every LangChain callback body runs inside ``with guard.stage(name):`` (or calls
:meth:`Guard.failed` from an ``except`` block, where a ``with`` would cost on
every LLM call). An ``Exception`` raised there is swallowed, counted in
``compaction.instrumentation.errors`` and logged: once per stage as a warning
naming the stage and the error's class (no traceback, no message: it may hold
content), and every time at debug level with the traceback. ``BaseException``s
that are not errors (cancellation, exit) pass through untouched.
"""

from __future__ import annotations

import logging
import sys
import threading

from otel_compaction._once import OncePerKey
from otel_compaction.emit.metrics import CompactionMetrics
from otel_compaction.semconv import ErrorStage

LOGGER = logging.getLogger("otel_compaction.instrument")


class _Stage:
    """``with guard.stage(name):`` swallows an ``Exception`` of the block and reports it."""

    __slots__ = ("_guard", "_name")

    def __init__(self, guard: Guard, name: str) -> None:
        self._guard = guard
        self._name = name

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, *_: object
    ) -> bool:
        if exc_type is None or not issubclass(exc_type, Exception):
            return False
        self._guard.failed(self._name, exc)
        return True


class Guard:
    """Catches what an instrumentation stage raised: counted, logged once per stage.

    Args:
        metrics: where the error is counted (only logged when None).
        counted_as: the ``compaction.error.stage`` every error is counted under
            (the LangChain handler's ``callback``); by default the stage's own name.
        logger: the logger of the warning and the debug lines.
        kind: what a stage is called in the warning (``stage``, ``LangChain callback``).
    """

    __slots__ = (
        "_counted_as",
        "_kind",
        "_lock",
        "_logged",
        "_logger",
        "_stages",
        "errors",
        "metrics",
    )

    def __init__(
        self,
        metrics: CompactionMetrics | None = None,
        *,
        counted_as: ErrorStage | None = None,
        logger: logging.Logger = LOGGER,
        kind: str = "stage",
    ) -> None:
        self.metrics = metrics
        self.errors = 0
        """Internal errors swallowed so far (also counted in the errors metric)."""
        self._counted_as = counted_as
        self._logger = logger
        self._kind = kind
        self._lock = threading.Lock()
        self._logged = OncePerKey()
        self._stages: dict[str, _Stage] = {}

    def stage(self, name: str) -> _Stage:
        """A reusable context manager guarding stage ``name``: an :class:`ErrorStage`, or
        any name (a callback's) when the guard has ``counted_as``."""
        stage = self._stages.get(name)
        if stage is None:
            stage = self._stages.setdefault(name, _Stage(self, name))
        return stage

    def failed(self, stage: str, error: BaseException | None = None) -> None:
        """Record ``error`` (default: the exception being handled) as an internal error."""
        try:
            error = error if error is not None else sys.exc_info()[1]
            with self._lock:
                self.errors += 1
            if self._logged.claim(stage):
                # No traceback in the host's log by default: it is one DEBUG line away.
                self._logger.warning(
                    "otel-compaction: internal error in %s %r (%s); the application is "
                    "unaffected (this and further errors there, with their traceback, are "
                    "logged at debug level on %s)",
                    self._kind, stage, _error_name(error), self._logger.name,
                )  # fmt: skip
            self._logger.debug(
                "otel-compaction: internal error in %s %r", self._kind, stage, exc_info=error
            )
            if self.metrics is not None:
                self.metrics.record_error(self._counted_as or stage)
        except Exception:  # noqa: BLE001, S110 - the error path itself must never raise
            pass


def _error_name(error: BaseException | None) -> str:
    """The class of ``error`` (never its message: it may hold content)."""
    return type(error).__name__ if error is not None else "unknown error"
