"""Registering the handler for every LangChain run in the process, and removing it.

LangChain's own mechanism is used: ``langchain_core.tracers.context.register_configure_hook``
registers a context variable that ``CallbackManager.configure`` reads for every
run; a handler found there is added as an inheritable handler (once per
manager, by identity). The variable is created with the handler as its
*default*, so runs in any thread or task see it, including threads started
before the install. ``uninstall`` disables the handler and takes the hook out
of LangChain's hook list again (a private list; should that ever fail, the
disabled handler stays registered and does nothing).

This is the public extension point LangSmith's tracer and the run collector
use; instrumentations that wrap ``BaseCallbackManager.__init__`` instead
(OpenInference, OpenLLMetry) coexist with it.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any

from langchain_core.tracers import context as lc_context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from otel_compaction.config import Settings
from otel_compaction.instrument._runtime import Runtime, get_runtime
from otel_compaction.instrument.langchain._handler import CompactionCallbackHandler

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_installed: tuple[CompactionCallbackHandler, contextvars.ContextVar[Any]] | None = None


def create_handler(
    runtime: Runtime | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    settings: Settings | None = None,
) -> CompactionCallbackHandler:
    """A handler on ``runtime``, or on a runtime of its own for the given providers.

    With neither a runtime nor providers nor settings, the handler uses the
    instrumentation's current runtime (``CompactionInstrumentor``'s when it is
    on), so it feeds the same conversations as the anthropic/openai layer.
    """
    if runtime is None:
        if tracer_provider is None and meter_provider is None and settings is None:
            runtime = get_runtime()
        else:
            runtime = Runtime(
                settings, tracer_provider=tracer_provider, meter_provider=meter_provider
            )
    return CompactionCallbackHandler(runtime)


def install(
    handler: CompactionCallbackHandler | None = None,
    *,
    runtime: Runtime | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    settings: Settings | None = None,
) -> CompactionCallbackHandler:
    """Register ``handler`` (default: ``create_handler(...)``) for every LangChain run.

    Installing again replaces the previous handler. Returns the installed handler.
    """
    global _installed
    if handler is None:
        handler = create_handler(
            runtime,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            settings=settings,
        )
    with _lock:
        _remove_locked()
        var: contextvars.ContextVar[Any] = contextvars.ContextVar(
            "otel_compaction_langchain_handler", default=handler
        )
        lc_context.register_configure_hook(var, inheritable=True)
        _installed = (handler, var)
    return handler


def uninstall() -> None:
    """Stop recording LangChain runs (no error when nothing is installed)."""
    with _lock:
        _remove_locked()


def installed_handler() -> CompactionCallbackHandler | None:
    """The handler ``install`` registered, if any."""
    return _installed[0] if _installed is not None else None


def _remove_locked() -> None:
    global _installed
    if _installed is None:
        return
    handler, var = _installed
    handler.enabled = False
    _installed = None
    hooks = getattr(lc_context, "_configure_hooks", None)
    if not isinstance(hooks, list):
        logger.debug("LangChain hook list not found; the disabled handler stays registered")
        return
    hooks[:] = [hook for hook in hooks if not (isinstance(hook, tuple) and hook[0] is var)]
