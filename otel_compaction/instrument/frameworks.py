"""Agent frameworks' summarization hooks: the model calls made inside one are a summarizer's.

Frameworks that compact with a model call of their own give it a place of its own:

- **pydantic-ai**: history processors (``capabilities=[ProcessHistory(fn)]``) run
  before every model request; a summarizing processor calls a second ``Agent``
  there. Every model call made while ``ProcessHistory.before_model_request`` runs is
  a summarizer's;
- **strands-agents**: ``SummarizingConversationManager._generate_summary`` makes the
  summary (through the agent's own model, or a ``summarization_agent``).

While one runs, a :class:`~otel_compaction.instrument._framework.FrameworkCall`
marked ``internal`` is open, so the anthropic/openai layer below records each call
as the compaction's cost in the conversation it draws on, never as a turn, and the
agent's next request that carries the summary as the compaction
(``otel_compaction.inference.summarizer``). The generic rule sees most of these
calls without the hook (a summarize instruction, no tools offered); the hook also
covers a summarizer prompt that says nothing of summaries, or one that offers tools
(strands gives a ``summarization_agent`` with none a no-op tool).

Where the framework configures its own context window, the hook passes it on:
strands' ``Agent.invoke_async`` (behind ``Agent.__call__`` too) opens a framework call,
not internal, carrying the agent model's ``context_window_limit`` as
``FrameworkCall.window`` for every model call the agent makes.

Each hook is optional: nothing is imported until the application imports the
framework (a post-import hook), and a framework release without the method is
skipped. ``CompactionInstrumentor`` installs them; ``uninstall`` restores the methods.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import wrapt
from opentelemetry.instrumentation.utils import unwrap

from otel_compaction.instrument import _runtime
from otel_compaction.instrument._framework import (
    FrameworkCall,
    current_call,
    enter_call,
    exit_call,
)
from otel_compaction.semconv import ErrorStage

__all__ = ["HOOKS", "install_when_imported", "uninstall"]

PYDANTIC_AI = "pydantic-ai"
STRANDS = "strands-agents"

HOOKS: tuple[tuple[str, str, str, str, bool], ...] = (
    (
        "strands.agent.agent",
        "Agent",
        "invoke_async",
        STRANDS,
        True,
    ),
    (
        "pydantic_ai.capabilities.process_history",
        "ProcessHistory",
        "before_model_request",
        PYDANTIC_AI,
        True,
    ),
    (
        "strands.agent.conversation_manager.summarizing_conversation_manager",
        "SummarizingConversationManager",
        "_generate_summary",
        STRANDS,
        False,
    ),
)
"""(module, class, method, framework, async) of every hook: the summarization hooks, and
strands' ``Agent.invoke_async`` (behind ``Agent.__call__`` too), which opens a framework
call (not internal) that carries the agent model's ``context_window_limit`` as ``window``."""
SUMMARIZERS = frozenset({"before_model_request", "_generate_summary"})


class _Hooks:
    """Which hooks are armed and which methods are wrapped (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.registered = False
        self.wrapped: list[tuple[Any, str]] = []


_hooks = _Hooks()


def _open(framework: str, method: str, instance: Any) -> tuple[FrameworkCall, Any] | None:
    """Open a framework call: internal around a summarizer, else carrying the framework's
    configured window (None when disarmed or on an internal error)."""
    if not _hooks.armed:
        return None
    try:
        internal = method in SUMMARIZERS
        if not internal and (outer := current_call()) is not None and outer.internal:
            return None  # an agent run inside a summarizer (a summarization_agent) stays its
        window = None if internal else _window(instance)
        call = FrameworkCall(
            conversation_id="", internal=internal, framework=framework, window=window
        )
        return call, enter_call(call)
    except Exception:  # noqa: BLE001 - never break the host: logged once, counted
        _runtime.guard().failed("context")
        return None


def _window(agent: Any) -> int | None:
    """A strands agent model's ``context_window_limit``, when it is a positive int."""
    limit = getattr(getattr(agent, "model", None), "context_window_limit", None)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def _close(opened: tuple[FrameworkCall, Any] | None) -> None:
    if opened is not None:
        exit_call(*opened)


def _sync_wrapper(framework: str, method: str) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        opened = _open(framework, method, instance)
        try:
            return wrapped(*args, **kwargs)
        finally:
            _close(opened)

    return wrapper


def _async_wrapper(framework: str, method: str) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: Any, kwargs: Any
    ) -> Awaitable[Any]:
        async def run() -> Any:
            opened = _open(framework, method, instance)
            try:
                return await wrapped(*args, **kwargs)
            finally:
                _close(opened)

        return run()

    return wrapper


def _wrap(module: Any, class_name: str, method: str, framework: str, is_async: bool) -> None:
    """Wrap ``class_name.method`` of ``module`` once (skipped when the release lacks it)."""
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not callable(getattr(cls, method, None)):
        return
    with _hooks.lock:
        if not _hooks.armed or any(o is cls and m == method for o, m in _hooks.wrapped):
            return
        factory = _async_wrapper if is_async else _sync_wrapper
        wrapt.wrap_function_wrapper(cls, method, factory(framework, method))
        _hooks.wrapped.append((cls, method))


def _on_import(spec: tuple[str, str, str, str, bool]) -> Callable[[Any], None]:
    _, class_name, method, framework, is_async = spec

    def hook(module: Any) -> None:
        with _runtime.guard().stage(ErrorStage.CONTEXT):
            _wrap(module, class_name, method, framework, is_async)

    return hook


def install_when_imported() -> None:
    """Arm every hook: wrapped now if its framework is imported, else when it is."""
    with _hooks.lock:
        _hooks.armed = True
        register = not _hooks.registered
        _hooks.registered = True
    for spec in HOOKS:
        if register:
            wrapt.register_post_import_hook(_on_import(spec), spec[0])
        elif spec[0] in sys.modules:
            _on_import(spec)(sys.modules[spec[0]])


def uninstall() -> None:
    """Disarm the hooks and restore every wrapped method (never imports a framework)."""
    with _hooks.lock:
        _hooks.armed = False
        wrapped, _hooks.wrapped = _hooks.wrapped, []
    for owner, method in reversed(wrapped):
        unwrap(owner, method)
