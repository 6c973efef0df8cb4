"""LangChain and LangGraph: compactions the framework makes, as ``compaction`` spans.

Many agents never call a provider's compaction themselves: LangChain's
``SummarizationMiddleware``, langmem's running summary and ``ClearToolUsesEdit``
compact for them, and ``ChatAnthropic`` carries Anthropic's server-side
compaction blocks. ``CompactionCallbackHandler`` recognises each of them and
records it (source ``langchain``) in the same conversation and lineage as the
model calls around it; ``install()`` registers it for every LangChain run::

    from otel_compaction.instrument.langchain import install
    install(tracer_provider=tp, meter_provider=mp)   # or pass handler=... yourself
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t-1"}})

``install_when_imported()`` defers all of it until the application imports
``langchain_core`` (importing it costs about a second, which an application that
merely has it installed should not pay). The contract with the SDK layer below is
``otel_compaction.instrument._framework``. Nothing here imports LangChain until it is needed, so
importing this package never fails without it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import TYPE_CHECKING, Any

import wrapt

if TYPE_CHECKING:
    from otel_compaction.instrument._runtime import Runtime
    from otel_compaction.instrument.langchain._handler import CompactionCallbackHandler
    from otel_compaction.instrument.langchain._install import (
        create_handler,
        install,
        installed_handler,
    )

__all__ = [
    "CompactionCallbackHandler",
    "create_handler",
    "install",
    "install_when_imported",
    "installed_handler",
    "uninstall",
]

_HOMES = {
    "CompactionCallbackHandler": "otel_compaction.instrument.langchain._handler",
    "create_handler": "otel_compaction.instrument.langchain._install",
    "install": "otel_compaction.instrument.langchain._install",
    "installed_handler": "otel_compaction.instrument.langchain._install",
}
_INSTALL_MODULE = "otel_compaction.instrument.langchain._install"


class _Deferred:
    """The install waiting for ``langchain_core`` to be imported (armed at most once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.registered = False
        self.runtime: Runtime | None = None

    def __call__(self, module: object) -> None:
        with self.lock:
            if not self.armed:
                return
            self.armed = False
            runtime = self.runtime
        importlib.import_module(_INSTALL_MODULE).install(runtime=runtime)


_deferred = _Deferred()


def install_when_imported(runtime: Runtime | None = None) -> None:
    """Install the handler on ``runtime`` now if ``langchain_core`` is imported, else on import.

    What ``CompactionInstrumentor`` calls: the application pays for nothing
    until it uses LangChain. Does nothing when langchain-core is not installed.
    """
    with _deferred.lock:
        _deferred.runtime = runtime
        _deferred.armed = True
        register = not _deferred.registered
        _deferred.registered = True
    if register:
        wrapt.register_post_import_hook(_deferred, "langchain_core")
    elif "langchain_core" in sys.modules:
        _deferred(sys.modules["langchain_core"])


def uninstall() -> None:
    """Remove the handler, and cancel a deferred install (never imports LangChain)."""
    with _deferred.lock:
        _deferred.armed = False
        _deferred.runtime = None
    module = sys.modules.get(_INSTALL_MODULE)
    if module is not None:
        module.uninstall()


def __getattr__(name: str) -> Any:
    """Import the public names lazily (they need langchain-core)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
