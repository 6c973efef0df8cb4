"""The LiteLLM callback: a ``CustomLogger`` registered in ``litellm.callbacks``.

LiteLLM's public extension point for every provider it speaks (its Anthropic path
uses its own HTTP handler, its OpenAI path posts through the openai client's
low-level ``post``: neither goes through a method the SDK wrappers see). The
callback forwards each hook to :class:`~._observer.LiteLLMObserver`; LiteLLM itself
also catches what a callback raises, but the observer never raises.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Mapping
from typing import Any

import litellm
from litellm.integrations.custom_logger import CustomLogger

from otel_compaction._count import as_count
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.litellm._observer import LiteLLMObserver
from otel_compaction.instrument.litellm._read import configured_window, provider_name

logger = logging.getLogger(__name__)

_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)
"""LiteLLM's callback lists: ``litellm.callbacks`` and those it copies a callback into."""


class CompactionLiteLLMCallback(CustomLogger):  # type: ignore[misc, unused-ignore]
    """Forwards LiteLLM's callbacks to a :class:`LiteLLMObserver` (``observer``)."""

    def __init__(self, observer: LiteLLMObserver) -> None:
        super().__init__()
        self.observer = observer
        self.opener = _SpanOpener(observer)

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """Before the provider's request, in the caller's context."""
        if isinstance(kwargs, Mapping):
            self.observer.pre_call(kwargs)

    def log_post_api_call(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """After the provider's request, in the caller's context."""
        if isinstance(kwargs, Mapping):
            self.observer.post_call(kwargs)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """A synchronous call's success, on LiteLLM's logging thread pool."""
        if isinstance(kwargs, Mapping):
            self.observer.success(kwargs, response_obj, ordered=True)

    def log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """A synchronous call's failure, in the caller's thread."""
        if isinstance(kwargs, Mapping):
            self.observer.failure(kwargs)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """An async call's success, on the event loop."""
        if isinstance(kwargs, Mapping):
            self.observer.success(kwargs, response_obj, ordered=False)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """An async call's failure, on the event loop."""
        if isinstance(kwargs, Mapping):
            self.observer.failure(kwargs)


@functools.lru_cache(maxsize=256)
def _table_window(model: str, provider: str) -> int | None:
    """``max_input_tokens`` of LiteLLM's model table (its local copy: no fetch here)."""
    try:
        info = litellm.get_model_info(model=model, custom_llm_provider=provider)
    except Exception:  # noqa: BLE001 - a model LiteLLM does not know
        return None
    window = as_count(info.get("max_input_tokens")) if isinstance(info, Mapping) else None
    return window or None


def window_of(runtime: Runtime) -> Any:
    """The window a call is read against: its ``model_info`` (the deployment's own), else
    LiteLLM's model table, unless ``OTEL_PYTHON_COMPACTION_MODEL_WINDOWS`` names the
    model (the user's override wins over any table)."""
    overrides = runtime.settings.model_windows

    def lookup(details: Mapping[str, Any]) -> int | None:
        configured = configured_window(details)
        if configured is not None:
            return configured
        model = details.get("model")
        if not isinstance(model, str) or not model or model in overrides:
            return None
        return _table_window(model, provider_name(details))

    return lookup


_lock = threading.Lock()
_installed: CompactionLiteLLMCallback | None = None


OTEL_LOGGER_MODULE = "litellm.integrations.opentelemetry"


class _SpanOpener(CustomLogger):  # type: ignore[misc, unused-ignore]
    """Makes a call's inference span the current span for the success callbacks behind it.

    LiteLLM's own OpenTelemetry logger writes a call's attributes onto the current span
    when there is one, and opens a ``litellm_request`` span only when there is none.
    Placed in front of that logger (and our callback behind it), this makes our span the
    current one in the context LiteLLM runs a call's success callbacks in: one span per
    call, with LiteLLM's attributes added to ours. Our callback ends the span and takes
    it out of that context again.
    """

    def __init__(self, observer: LiteLLMObserver) -> None:
        super().__init__()
        self.observer = observer

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Before LiteLLM's logger, in its context: our span becomes current there."""
        if isinstance(kwargs, Mapping):
            self.observer.share(kwargs)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """The same for an async call, on the event loop."""
        if isinstance(kwargs, Mapping):
            self.observer.share(kwargs)


def _otel_loggers() -> list[Any]:
    """LiteLLM's own OpenTelemetry loggers among its callbacks, if any."""
    module = sys.modules.get(OTEL_LOGGER_MODULE)
    kind = getattr(module, "OpenTelemetry", None) if module is not None else None
    if not isinstance(kind, type):
        return []
    found = [
        *getattr(litellm, "success_callback", []),
        *getattr(litellm, "_async_success_callback", []),
    ]
    return [c for c in found if isinstance(c, kind)]


def order_around_otel(details: Mapping[str, Any], span: Any) -> None:
    """Where LiteLLM's own OpenTelemetry logger runs too (``callbacks=["otel"]``): the
    opener goes in front of it, our callback behind it, in each success list."""
    del details, span
    callback = _installed
    loggers = _otel_loggers()
    if callback is None or not loggers:
        return
    for name in ("success_callback", "_async_success_callback"):
        found = getattr(litellm, name, None)
        if isinstance(found, list) and any(logger in found for logger in loggers):
            _place(found, callback, loggers)


def _place(found: list[Any], callback: CompactionLiteLLMCallback, loggers: list[Any]) -> None:
    first = min(found.index(logger) for logger in loggers if logger in found)
    opener = callback.opener
    if opener not in found[:first]:
        if opener in found:
            found.remove(opener)
            first = min(found.index(logger) for logger in loggers if logger in found)
        found.insert(first, opener)
    last = max(found.index(logger) for logger in loggers if logger in found)
    if callback not in found[last:]:
        if callback in found:
            found.remove(callback)
        found.append(callback)


def install(runtime: Runtime) -> CompactionLiteLLMCallback:
    """Register a callback on ``runtime`` in ``litellm.callbacks`` (replacing ours)."""
    global _installed
    observer = LiteLLMObserver(runtime, window_of=window_of(runtime), on_started=order_around_otel)
    callback = CompactionLiteLLMCallback(observer)
    with _lock:
        _remove_locked()
        litellm.callbacks.append(callback)
        _installed = callback
    return callback


def uninstall() -> None:
    """Take the callback out of every LiteLLM callback list; end the calls in flight."""
    with _lock:
        _remove_locked()


def installed() -> CompactionLiteLLMCallback | None:
    """The callback ``install`` registered, if any."""
    return _installed


def _remove_locked() -> None:
    global _installed
    callback, _installed = _installed, None
    if callback is None:
        return
    callback.observer.close()
    for name in _CALLBACK_LISTS:
        found = getattr(litellm, name, None)
        if isinstance(found, list):
            found[:] = [c for c in found if c is not callback and c is not callback.opener]
