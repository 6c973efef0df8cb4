"""anthropic ``messages.stream()``: the stream managers, observed from the request they defer.

``messages.stream()`` returns a manager that makes its request when it is
entered. Current releases build their ``MessageStream`` on the raw event
stream that request returns: we replace the manager's deferred request (the
manager object stays the SDK's own) so the span starts when it is entered and
the raw stream is proxied, which ends the span at the stream's end whatever
reads it (``text_stream``, ``get_final_message()``, ``until_done()``).

Older releases (anthropic 0.x) rebuild the ``MessageStream`` from the raw
stream's response and parse it themselves: there the manager is proxied, the
span starts at ``__enter__`` and ends at ``__exit__`` (or collection), with the
helper's accumulated message read at the end.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import wrapt

from otel_compaction.instrument._api import ProviderApi
from otel_compaction.instrument._begin import begin
from otel_compaction.instrument._call import InferenceCall
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._streams import AsyncStreamProxy, StreamProxy, StreamState
from otel_compaction.instrument._wrappers import Wrapper, complete, skip
from otel_compaction.semconv import ErrorStage

# The name-mangled attribute where each stream manager keeps its deferred request.
_MANAGER_REQUEST = (
    "_MessageStreamManager__api_request",
    "_BetaMessageStreamManager__api_request",
    "_AsyncMessageStreamManager__api_request",
    "_BetaAsyncMessageStreamManager__api_request",
)


def _request_attribute(manager: Any) -> str | None:
    return next((name for name in _MANAGER_REQUEST if hasattr(manager, name)), None)


_RAW_STREAM: dict[type, bool] = {}


def _reads_raw_stream(manager_class: type) -> bool:
    """Whether the manager's ``MessageStream`` is built on the raw stream (current releases)."""
    known = _RAW_STREAM.get(manager_class)
    if known is None:
        module = sys.modules.get(manager_class.__module__)
        stream_class = getattr(module, manager_class.__name__.replace("Manager", ""), None)
        init = getattr(stream_class, "__init__", None)
        known = init is not None and "raw_stream" in inspect.signature(init).parameters
        _RAW_STREAM[manager_class] = known
    return known


def stream_manager_wrapper(runtime: Runtime, api: ProviderApi) -> Wrapper:
    """Wrap anthropic ``messages.stream`` (sync and async): see the module docstring."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        manager = wrapped(*args, **kwargs)
        if skip():
            return manager
        request_kwargs = {**kwargs, "stream": True}
        with runtime.guard.stage(ErrorStage.REQUEST):
            name = _request_attribute(manager)
            if name is None:
                return manager
            if not _reads_raw_stream(type(manager)):
                return ManagerProxy(manager, _Deferred(runtime, api, instance, request_kwargs))
            original = getattr(manager, name)
            if callable(original):
                deferred: Any = _deferred_sync(runtime, api, instance, request_kwargs, original)
            else:
                deferred = _deferred_async(runtime, api, instance, request_kwargs, original)
            setattr(manager, name, deferred)
        return manager

    return wrapper


def _deferred_sync(
    runtime: Runtime,
    api: ProviderApi,
    instance: Any,
    kwargs: dict[str, Any],
    original: Callable[[], Any],
) -> Callable[[], Any]:
    def api_request() -> Any:
        call = begin(runtime, api, instance, kwargs) if not skip() else None
        if call is None:
            return original()
        token = call.enter()
        try:
            result = original()
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        return complete(call, api, result, raw=None)

    return api_request


def _deferred_async(
    runtime: Runtime,
    api: ProviderApi,
    instance: Any,
    kwargs: dict[str, Any],
    original: Awaitable[Any],
) -> Awaitable[Any]:
    async def api_request() -> Any:
        call = begin(runtime, api, instance, kwargs) if not skip() else None
        if call is None:
            return await original
        token = call.enter()
        try:
            result = await original
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        return complete(call, api, result, raw=None)

    return api_request()


class _Deferred:
    """What an older release's manager proxy needs to start the call at ``__enter__``."""

    __slots__ = ("api", "instance", "kwargs", "runtime")

    def __init__(self, runtime: Runtime, api: ProviderApi, instance: Any, kwargs: dict[str, Any]):
        self.runtime, self.api, self.instance, self.kwargs = runtime, api, instance, kwargs

    def begin(self) -> InferenceCall | None:
        return None if skip() else begin(self.runtime, self.api, self.instance, self.kwargs)

    def stream(self, call: InferenceCall, stream: Any, asynchronous: bool) -> Any:
        with call.runtime.guard.stage(ErrorStage.STREAM):
            state = StreamState(call, self.api)
            state.source = stream
            return (AsyncStreamProxy if asynchronous else StreamProxy)(stream, state)
        call.finish(None)
        return stream


class ManagerProxy(wrapt.ObjectProxy[Any]):
    """An older release's stream manager: the call spans ``__enter__`` to ``__exit__``."""

    def __init__(self, wrapped: Any, deferred: _Deferred) -> None:
        super().__init__(wrapped)
        self._self_deferred = deferred
        self._self_stream: Any = None

    def __enter__(self) -> Any:
        call = self._self_deferred.begin()
        if call is None:
            return self.__wrapped__.__enter__()
        token = call.enter()
        try:
            stream = self.__wrapped__.__enter__()
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        self._self_stream = self._self_deferred.stream(call, stream, asynchronous=False)
        return self._self_stream

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._end()

    async def __aenter__(self) -> Any:
        call = self._self_deferred.begin()
        if call is None:
            return await self.__wrapped__.__aenter__()
        token = call.enter()
        try:
            stream = await self.__wrapped__.__aenter__()
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        self._self_stream = self._self_deferred.stream(call, stream, asynchronous=True)
        return self._self_stream

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._end()

    def _end(self) -> None:
        stream, self._self_stream = self._self_stream, None
        if isinstance(stream, StreamProxy | AsyncStreamProxy):
            stream._self_state.end(source=stream.__wrapped__)
