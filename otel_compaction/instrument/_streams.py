"""Stream proxies: the caller's stream, unchanged, with one end for our span.

A ``wrapt.ObjectProxy`` around the SDK's ``Stream`` / ``AsyncStream``: every
attribute, ``isinstance`` check and event is the SDK's own, in the same order.
Each event is handed to a cheap accumulator (no metric, no span call per
event). The call is finished exactly once, on the first of: exhaustion, an
error, ``close()`` (after a ``break``), ``__exit__``, or the proxy's collection
(``weakref.finalize``). No context is attached across a ``yield``, so closing a
generator in another task cannot fail to detach anything.
"""

from __future__ import annotations

import weakref
from typing import Any

import wrapt

from otel_compaction._once import Once
from otel_compaction.instrument._api import ProviderApi
from otel_compaction.instrument._call import InferenceCall
from otel_compaction.semconv import ErrorStage


class StreamState:
    """The accumulator and the once-only end of one streamed call."""

    __slots__ = ("_broken", "_done", "_seen", "api", "call", "reader", "source")

    def __init__(self, call: InferenceCall, api: ProviderApi) -> None:
        self.call = call
        self.api = api
        self.reader = api.stream_reader(call.request)
        self.source: Any = None
        """The stream itself, for helpers that parse events without the proxy (kept for GC)."""
        self._seen = False
        self._done = Once()
        self._broken = False

    def on_event(self, event: Any) -> None:
        """Accumulate one event; after an internal error, stop looking at events."""
        if self._broken:
            return
        self._seen = True
        try:
            self.reader.on_event(event)
        except Exception:  # noqa: BLE001 - one report, then the stream is left alone
            self._broken = True
            self.call.runtime.guard.failed("stream")

    def end(self, error: BaseException | None = None, source: Any = None) -> None:
        """Finish the call with what was read (once; later calls do nothing).

        ``source`` is the stream itself, when known: a stream helper that parses
        its own events without iterating the proxy (older anthropic releases'
        ``MessageStream``) still has its accumulated message to read.
        """
        if not self._done.claim():
            return
        response = None
        with self.call.runtime.guard.stage(ErrorStage.STREAM):
            response = self.reader.result()
            if not self._seen and source is not None:
                snapshot = getattr(source, "current_message_snapshot", None)
                if snapshot is not None:
                    response = self.api.response(snapshot, self.call.request)
        self.call.finish(response, error)

    def abandoned(self) -> None:
        """The stream was collected without being read to its end or closed."""
        with self.call.runtime.guard.stage(ErrorStage.STREAM):
            self.end(source=self.source)


class StreamProxy(wrapt.ObjectProxy[Any]):
    """A synchronous SDK stream, observed."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        finalizer = weakref.finalize(self, state.abandoned)
        finalizer.atexit = False

    def __iter__(self) -> Any:
        state = self._self_state
        on_event = state.on_event
        try:
            for event in self.__wrapped__:
                on_event(event)
                yield event
        except GeneratorExit:
            raise  # a `break`: the stream may still be read or closed later
        except BaseException as error:
            state.end(error)
            raise
        state.end()

    def __next__(self) -> Any:
        state = self._self_state
        try:
            event = self.__wrapped__.__next__()
        except StopIteration:
            state.end()
            raise
        except BaseException as error:
            state.end(error)
            raise
        state.on_event(event)
        return event

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_state.end(source=self.__wrapped__)

    def __enter__(self) -> Any:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._self_state.end(source=self.__wrapped__)


class AsyncStreamProxy(wrapt.ObjectProxy[Any]):
    """An asynchronous SDK stream, observed."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        finalizer = weakref.finalize(self, state.abandoned)
        finalizer.atexit = False

    async def __aiter__(self) -> Any:
        state = self._self_state
        on_event = state.on_event
        try:
            async for event in self.__wrapped__:
                on_event(event)
                yield event
        except GeneratorExit:
            raise
        except BaseException as error:
            state.end(error)
            raise
        state.end()

    async def __anext__(self) -> Any:
        state = self._self_state
        try:
            event = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            state.end()
            raise
        except BaseException as error:
            state.end(error)
            raise
        state.on_event(event)
        return event

    async def close(self) -> Any:
        try:
            return await self.__wrapped__.close()
        finally:
            self._self_state.end(source=self.__wrapped__)

    async def __aenter__(self) -> Any:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_state.end(source=self.__wrapped__)
