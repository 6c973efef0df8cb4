"""The wrapt wrappers: one factory per wrapped method shape.

Each wrapper calls the original exactly once with the caller's arguments,
returns what it returned (a stream comes back inside a transparent proxy), and
re-raises its exception unmodified. Instrumentation failures only ever make a
call go uninstrumented.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._api import ProviderApi
from otel_compaction.instrument._begin import begin
from otel_compaction.instrument._call import InferenceCall
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._streams import AsyncStreamProxy, StreamProxy, StreamState
from otel_compaction.semconv import ErrorStage

logger = logging.getLogger(__name__)

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

RAW_RESPONSE_HEADER = "x-stainless-raw-response"
"""Set by ``with_raw_response`` / ``with_streaming_response``: the body is the caller's."""


# with_raw_response's header value: "raw" today, "true" in the legacy response of
# anthropic 0.x / openai 1.x (whose parse() is synchronous even on async clients).
_PARSED_RAW = frozenset({"raw", "true"})


def _raw_mode(kwargs: Mapping[str, Any]) -> str | None:
    """``raw`` (``with_raw_response``), ``stream`` (``with_streaming_response``) or None."""
    headers = kwargs.get("extra_headers")
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if str(key).lower() == RAW_RESPONSE_HEADER:
            return str(value).lower()
    return None


def _body(result: Any, raw: str | None, stream: bool) -> Any:
    """The parsed response the caller will see, or None when reading it would consume it.

    A ``with_raw_response`` result of a non-streaming call (LangChain's ChatAnthropic
    calls the client this way) has its body read already; ``parse()`` caches the
    parsed object, so the caller's own ``parse()`` gets this very object. A body
    that does not parse (a 200 that is no JSON) is left alone: the caller's own
    ``parse()`` raises what it raises without us, and the span keeps the request.
    """
    if raw is None:
        return result
    parse = getattr(result, "parse", None)
    if raw in _PARSED_RAW and not stream and callable(parse):
        if inspect.iscoroutinefunction(parse):
            return None  # the async wrapper awaits it (parsed_async)
        try:
            return parse()
        except Exception:  # noqa: BLE001 - a body that does not parse is the caller's to see
            logger.debug("with_raw_response body did not parse; the span keeps the request")
    return None


async def parsed_async(result: Any, raw: str | None, stream: bool) -> Any:
    """The async client's ``with_raw_response`` body: ``parse()`` is a coroutine there."""
    parse = getattr(result, "parse", None)
    if raw in _PARSED_RAW and not stream and inspect.iscoroutinefunction(parse):
        try:
            return await parse()
        except Exception:  # noqa: BLE001 - as in _body: the caller's own parse() raises it
            logger.debug("with_raw_response body did not parse; the span keeps the request")
    return None


def skip() -> bool:
    """Whether this call is not ours to instrument: nested, suppressed, or made by a
    framework layer that records its calls itself (LiteLLM's callback)."""
    if scope.in_call() or not is_instrumentation_enabled():
        return True
    framework = scope.framework_call()
    return framework is not None and framework.owns_calls


def complete(call: InferenceCall, api: ProviderApi, result: Any, raw: str | None) -> Any:
    """The caller's result: a stream wrapped in a proxy, anything else as is (call finished)."""
    try:
        if call.request.stream and raw is None:
            state = StreamState(call, api)
            if hasattr(result, "__aiter__"):
                return AsyncStreamProxy(result, state)
            return StreamProxy(result, state)
        body = _body(result, raw, bool(call.request.stream))
        call.finish(None if body is None else api.response(body, call.request))
        return result
    except Exception:  # noqa: BLE001 - never break the host: logged once, counted
        call.runtime.guard.failed("response")
    call.finish(None)  # reading the response failed: end the span with what is known
    return result


def create_wrapper(runtime: Runtime, api: ProviderApi) -> Wrapper:
    """Wrap a synchronous ``create`` (and ``compact``): one inference span per call."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if skip():
            return wrapped(*args, **kwargs)
        call = begin(runtime, api, instance, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        token = call.enter()
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        return complete(call, api, result, _raw_mode(kwargs))

    return wrapper


def async_create_wrapper(runtime: Runtime, api: ProviderApi) -> Wrapper:
    """Wrap an ``async def create``: the span is current only around the awaited call."""

    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if skip():
            return await wrapped(*args, **kwargs)
        call = begin(runtime, api, instance, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        token = call.enter()
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as error:
            call.leave(token)
            call.finish(None, error)
            raise
        call.leave(token)
        raw = _raw_mode(kwargs)
        if raw is not None:
            with runtime.guard.stage(ErrorStage.RESPONSE):
                body = await parsed_async(result, raw, bool(call.request.stream))
                if body is not None:
                    call.finish(api.response(body, call.request))
                    return result
        return complete(call, api, result, raw)

    return wrapper


def suppress_sdk_span_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap anthropic's ``start_api_call_span``: no SDK span for a call we instrument."""
    if scope.in_call():
        return None
    return wrapped(*args, **kwargs)
