"""Reading OpenAI Chat Completions and Responses calls, compaction included.

Chat Completions carry the whole history in ``messages``. Responses either do
too (stateless ``input`` lists) or chain on the server (``previous_response_id``,
``conversation``): then only the new items are sent and the conversation is the
chain's. Compaction shows up as ``compaction`` output items (opaque: the
encrypted content stands in for the summary), ``responses.compact`` results,
the ``response.compaction.compacting`` stream event, and a prompt cache miss
whose reason is ``context_compacted``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.instrument._api import (
    RequestInfo,
    ResponseInfo,
    ServerCompaction,
    field_of,
    offers_tools,
    server_attributes,
)
from otel_compaction.semconv import CallUsage, CompactionMode, CompactionTrigger


def _base_attributes(instance: Any, model: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
        sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_OPENAI,
        **server_attributes(instance),
    }
    if isinstance(model, str):
        attributes[sc.GEN_AI_REQUEST_MODEL] = model
    return attributes


def _sampling(attributes: dict[str, Any], kwargs: Mapping[str, Any], *max_names: str) -> None:
    for name in max_names:
        if (value := as_count(kwargs.get(name))) is not None:
            attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] = value
            break
    if isinstance(temperature := kwargs.get("temperature"), int | float):
        attributes[sc.GEN_AI_REQUEST_TEMPERATURE] = float(temperature)


# --------------------------------------------------------------------------- #
# Chat Completions
# --------------------------------------------------------------------------- #


class OpenAIChat:
    """``chat.completions.create`` (sync, async, ``stream=True``)."""

    def request(self, instance: Any, kwargs: Mapping[str, Any]) -> RequestInfo:
        """Read the keyword arguments of a Chat Completions call."""
        model = kwargs.get("model")
        attributes = _base_attributes(instance, model)
        _sampling(attributes, kwargs, "max_completion_tokens", "max_tokens")
        messages = kwargs.get("messages")
        return RequestInfo(
            provider=sc.PROVIDER_OPENAI,
            operation=sc.OPERATION_CHAT,
            model=model if isinstance(model, str) else None,
            attributes=attributes,
            messages=messages if isinstance(messages, list | tuple) else None,
            stream=kwargs.get("stream") is True,
            tools=offers_tools(kwargs.get("tools"), kwargs.get("functions")),
        )

    def response(self, result: Any, request: RequestInfo) -> ResponseInfo:
        """Read a ``ChatCompletion``."""
        del request
        info = ResponseInfo(response_id=field_of(result, "id"), model=field_of(result, "model"))
        _chat_usage(info, field_of(result, "usage"))
        choices = list(field_of(result, "choices") or ())
        for choice in choices:
            if isinstance(reason := field_of(choice, "finish_reason"), str):
                info.finish_reasons.append(reason)
        if choices:
            message = field_of(choices[0], "message")
            _chat_message(info, field_of(message, "content"), field_of(message, "tool_calls"))
            info.echo = (message,)
        return info

    def stream_reader(self, request: RequestInfo) -> ChatStream:
        """A reader of ``ChatCompletionChunk`` objects."""
        return ChatStream()


def _chat_usage(info: ResponseInfo, usage: Any) -> None:
    if usage is None:
        return
    info.input_tokens = as_count(field_of(usage, "prompt_tokens"))
    info.output_tokens = as_count(field_of(usage, "completion_tokens"))
    info.cache_read_tokens = as_count(
        field_of(field_of(usage, "prompt_tokens_details"), "cached_tokens")
    )
    details = field_of(usage, "completion_tokens_details")
    info.reasoning_tokens = as_count(field_of(details, "reasoning_tokens"))


def _chat_message(info: ResponseInfo, content: Any, tool_calls: Any) -> None:
    if isinstance(content, str) and content:
        info.output_text.append(content)
    for call in tool_calls or ():
        function = field_of(call, "function")
        info.tool_calls.append(str(field_of(function, "name")))
        arguments = field_of(function, "arguments")
        info.tool_arguments.append(arguments if isinstance(arguments, str) else None)


class ChatStream:
    """Accumulates chat completion chunks: text, tool-call deltas, finish reason, usage."""

    __slots__ = ("_calls", "_info", "_text")

    def __init__(self) -> None:
        self._info = ResponseInfo()
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}

    def on_event(self, event: Any) -> None:
        """Take one chunk."""
        info = self._info
        if info.response_id is None:
            info.response_id = getattr(event, "id", None)
            info.model = getattr(event, "model", None)
        if getattr(event, "usage", None) is not None:
            _chat_usage(info, event.usage)
        for choice in getattr(event, "choices", None) or ():
            if getattr(choice, "finish_reason", None):
                info.finish_reasons = [choice.finish_reason]
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            if getattr(delta, "content", None):
                self._text.append(delta.content)
            for call in getattr(delta, "tool_calls", None) or ():
                self._tool_delta(call)

    def _tool_delta(self, call: Any) -> None:
        entry = self._calls.setdefault(
            call.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        entry["id"] = getattr(call, "id", None) or entry["id"]
        function = getattr(call, "function", None)
        if function is not None:
            entry["function"]["name"] += getattr(function, "name", None) or ""
            entry["function"]["arguments"] += getattr(function, "arguments", None) or ""

    def result(self) -> ResponseInfo:
        """The completion as far as it was read."""
        info = self._info
        info.output_text, info.tool_calls, info.tool_arguments = [], [], []
        calls = [self._calls[i] for i in sorted(self._calls)]
        text = "".join(self._text)
        _chat_message(info, text, calls)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        info.echo = (message,)
        return info


# --------------------------------------------------------------------------- #
# Responses
# --------------------------------------------------------------------------- #


def _input_list(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list | tuple):
        return list(value)
    return None


def _conversation_id(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    identifier = field_of(value, "id")
    return identifier if isinstance(identifier, str) and identifier else None


class OpenAIResponses:
    """``responses.create`` (and ``responses.stream``, which calls it), sync and async."""

    compaction_call = False

    def request(self, instance: Any, kwargs: Mapping[str, Any]) -> RequestInfo:
        """Read the keyword arguments of a Responses call."""
        model = kwargs.get("model")
        attributes = _base_attributes(instance, model)
        _sampling(attributes, kwargs, "max_output_tokens")
        items = _input_list(kwargs.get("input")) or []
        previous = kwargs.get("previous_response_id")
        conversation = _conversation_id(kwargs.get("conversation"))
        chained = isinstance(previous, str) or conversation is not None
        return RequestInfo(
            provider=sc.PROVIDER_OPENAI,
            operation=sc.OPERATION_CHAT,
            model=model if isinstance(model, str) else None,
            attributes=attributes,
            system=kwargs.get("instructions"),
            messages=None if chained else items,
            new_items=items if chained else (),
            stream=kwargs.get("stream") is True,
            conversation_hint=conversation,
            previous_response_id=previous if isinstance(previous, str) else None,
            compaction_call=self.compaction_call,
            chains_responses=True,
            tools=offers_tools(kwargs.get("tools")),
        )

    def response(self, result: Any, request: RequestInfo) -> ResponseInfo:
        """Read a ``Response`` (or a ``CompactedResponse``)."""
        info = ResponseInfo(response_id=field_of(result, "id"), model=field_of(result, "model"))
        _responses_usage(info, field_of(result, "usage"))
        status = field_of(result, "status")
        reason = field_of(field_of(result, "incomplete_details"), "reason")
        if isinstance(reason, str):
            info.finish_reasons.append(reason)
        elif isinstance(status, str):
            info.finish_reasons.append(status)
        output = list(field_of(result, "output") or ())
        for item in output:
            _read_item(info, item, request)
        diagnostics = field_of(result, "prompt_cache_diagnostics")
        if field_of(diagnostics, "reason") == CompactionTrigger.CONTEXT_COMPACTED:
            info.compactions.append(
                ServerCompaction(CompactionMode.SERVER, CompactionTrigger.CONTEXT_COMPACTED)
            )
        info.conversation_id = _conversation_id(field_of(result, "conversation"))
        info.echo = tuple(output)
        return info

    def stream_reader(self, request: RequestInfo) -> ResponsesStream:
        """A reader of Responses stream events."""
        return ResponsesStream(self, request)


class OpenAICompact(OpenAIResponses):
    """``responses.compact``: a compaction call, not a turn."""

    compaction_call = True


def _responses_usage(info: ResponseInfo, usage: Any) -> None:
    if usage is None:
        return
    info.input_tokens = as_count(field_of(usage, "input_tokens"))
    info.output_tokens = as_count(field_of(usage, "output_tokens"))
    details = field_of(usage, "input_tokens_details")
    info.cache_read_tokens = as_count(field_of(details, "cached_tokens"))
    info.cache_write_tokens = as_count(field_of(details, "cache_write_tokens"))
    info.reasoning_tokens = as_count(
        field_of(field_of(usage, "output_tokens_details"), "reasoning_tokens")
    )


def _call_usage(request: RequestInfo) -> CallUsage:
    """What the usage of the call that returned a compaction item counts.

    ``responses.compact``: "token accounting for the compaction pass" (the SDK's
    ``CompactedResponse.usage``), whose input is the context it compacted: the size
    before. A ``responses.create`` call with ``context_management`` compacts on its way
    once "the rendered token count crosses the configured threshold" (the compaction
    guide); neither the guide nor ``ResponseUsage`` says whether its ``input_tokens`` are
    the rendered input before that or the compacted one after: unknown.
    """
    return CallUsage.BEFORE if request.compaction_call else CallUsage.UNKNOWN


def _read_item(info: ResponseInfo, item: Any, request: RequestInfo) -> None:
    kind = field_of(item, "type")
    if kind == "function_call":
        info.tool_calls.append(str(field_of(item, "name")))
        arguments = field_of(item, "arguments")
        info.tool_arguments.append(arguments if isinstance(arguments, str) else None)
    elif kind == "compaction":
        key = field_of(item, "encrypted_content") or field_of(item, "id")
        info.compactions.append(
            ServerCompaction(
                mode=CompactionMode.SERVER,
                trigger=CompactionTrigger.RESPONSES_COMPACT
                if request.compaction_call
                else CompactionTrigger.COMPACT_THRESHOLD,
                summary=key if isinstance(key, str) else None,
                summary_is_text=False,
                compaction_id=field_of(item, "id"),
                call_usage=_call_usage(request),
            )
        )
    elif kind == "message" and field_of(item, "role") == "assistant":
        for part in field_of(item, "content") or ():
            text = field_of(part, "text")
            if isinstance(text, str):
                info.output_text.append(text)


class ResponsesStream:
    """Keeps the final ``response.completed`` object, or the items done before a stop."""

    __slots__ = ("_api", "_compacting", "_final", "_items", "_request", "_started")

    def __init__(self, api: OpenAIResponses, request: RequestInfo) -> None:
        self._api = api
        self._request = request
        self._final: Any = None
        self._started: Any = None
        self._items: list[Any] = []
        self._compacting = False

    def on_event(self, event: Any) -> None:
        """Take one event."""
        kind = getattr(event, "type", None)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._final = event.response
        elif kind == "response.created":
            self._started = event.response
        elif kind == "response.output_item.done":
            self._items.append(event.item)
        elif kind == "response.compaction.compacting":
            self._compacting = True

    def result(self) -> ResponseInfo:
        """The final response, or what the stream said before it was left."""
        if self._final is not None:
            return self._api.response(self._final, self._request)
        info = ResponseInfo(
            response_id=field_of(self._started, "id"), model=field_of(self._started, "model")
        )
        for item in self._items:
            _read_item(info, item, self._request)
        if self._compacting and not info.compactions:
            info.compactions.append(
                ServerCompaction(
                    CompactionMode.SERVER,
                    CompactionTrigger.COMPACT_THRESHOLD,
                    call_usage=CallUsage.UNKNOWN,
                )
            )
        info.echo = tuple(self._items)
        return info
