"""LiteLLM, and the agents built on it (aider, OpenHands): every call, whatever the provider.

``litellm.completion`` / ``acompletion`` / ``responses`` reach Anthropic through
LiteLLM's own HTTP handler and OpenAI through the openai client's low-level ``post``,
so the SDK wrappers see neither. A ``CustomLogger`` registered in ``litellm.callbacks``
(LiteLLM's public callback API) sees every call; it feeds the same engine the SDK
wrappers feed (conversations, pressure, inferred compactions, detectors), one
inference span per call (see ``_observer``)::

    CompactionInstrumentor().instrument()   # installs it once the app imports litellm

Summarizers' calls are the compaction's cost, never a turn: a call whose LiteLLM
metadata names a condenser (OpenHands' condenser LLM), and aider's ``ChatSummary``,
whose thread gets the scope of the agent that started it (``_aider``).

``install_when_imported()`` defers all of it until the application imports ``litellm``
(or aider): nothing here imports either before, so this package imports without them.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import TYPE_CHECKING

import wrapt

from otel_compaction.semconv import ErrorStage

if TYPE_CHECKING:
    from otel_compaction.instrument._runtime import Runtime

__all__ = ["install_when_imported", "uninstall"]

_HANDLER = "otel_compaction.instrument.litellm._handler"
_AIDER = "otel_compaction.instrument.litellm._aider"
_HOOKS = {
    "litellm": _HANDLER,
    "aider.coders.base_coder": _AIDER,
    "aider.history": _AIDER,
}
"""Module imported by the application -> our module that installs on it."""


class _Deferred:
    """The installs waiting for their modules to be imported (armed until ``uninstall``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.registered = False
        self.runtime: Runtime | None = None

    def __call__(self, module: object) -> None:
        name = getattr(module, "__name__", "")
        with self.lock:
            runtime = self.runtime
            if not self.armed or runtime is None or name not in _HOOKS:
                return
        with runtime.guard.stage(ErrorStage.CONTEXT):
            importlib.import_module(_HOOKS[name]).install(runtime)


_deferred = _Deferred()


def install_when_imported(runtime: Runtime) -> None:
    """Install on ``runtime`` now for what is imported, else when it is imported.

    What ``CompactionInstrumentor`` calls: nothing is imported here, so an application
    without LiteLLM pays nothing.
    """
    with _deferred.lock:
        _deferred.runtime = runtime
        _deferred.armed = True
        register = not _deferred.registered
        _deferred.registered = True
    if register:
        for name in _HOOKS:
            wrapt.register_post_import_hook(_deferred, name)
        return
    for name in _HOOKS:
        if name in sys.modules:
            _deferred(sys.modules[name])


def uninstall() -> None:
    """Remove the callback and the aider hooks; cancel deferred installs (imports nothing)."""
    with _deferred.lock:
        _deferred.armed = False
        _deferred.runtime = None
    for name in (_HANDLER, _AIDER):
        module = sys.modules.get(name)
        if module is not None:
            module.uninstall()
