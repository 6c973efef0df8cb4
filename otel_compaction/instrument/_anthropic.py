"""Reading Anthropic Messages calls: arguments, responses, raw stream events.

Server-side context management shows up as ``compaction`` content blocks
(``compaction_delta`` in streams; ``content: null`` means the summary failed)
and as ``context_management.applied_edits`` (``clear_tool_uses_*``,
``clear_thinking_*``: recorded as one ``prune``). Usage input tokens are the sum
of ``input_tokens``, ``cache_creation_input_tokens`` and ``cache_read_input_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.inference.messages import plain
from otel_compaction.instrument._api import (
    RequestInfo,
    ResponseInfo,
    ServerCompaction,
    field_of,
    fields_of,
    offers_tools,
    server_attributes,
)
from otel_compaction.semconv import CompactionMode, CompactionTrigger


def _client_conversation_id(instance: Any) -> str | None:
    """The client's own ``open_telemetry={"conversation_id": ...}`` option (anthropic >= 1.14)."""
    otel = getattr(getattr(instance, "_client", None), "_otel", None)
    value = getattr(otel, "conversation_id", None)
    return value if isinstance(value, str) and value else None


def _is_mapping(value: Any) -> bool:
    return value is not None and isinstance(value, Mapping)


class AnthropicMessages:
    """``messages.create`` / ``messages.stream``, plain and beta, sync and async."""

    def request(self, instance: Any, kwargs: Mapping[str, Any]) -> RequestInfo:
        """Read the keyword arguments of a Messages call."""
        model = kwargs.get("model")
        attributes: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_ANTHROPIC,
            **server_attributes(instance),
        }
        if isinstance(model, str):
            attributes[sc.GEN_AI_REQUEST_MODEL] = model
        if (max_tokens := as_count(kwargs.get("max_tokens"))) is not None:
            attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
        if isinstance(temperature := kwargs.get("temperature"), int | float):
            attributes[sc.GEN_AI_REQUEST_TEMPERATURE] = float(temperature)
        messages = kwargs.get("messages")
        return RequestInfo(
            provider=sc.PROVIDER_ANTHROPIC,
            operation=sc.OPERATION_CHAT,
            model=model if isinstance(model, str) else None,
            attributes=attributes,
            system=kwargs.get("system"),
            messages=messages if isinstance(messages, list | tuple) else None,
            stream=kwargs.get("stream") is True,
            conversation_hint=_client_conversation_id(instance),
            compaction_call=_is_mapping(kwargs.get("compaction")),
            tools=offers_tools(kwargs.get("tools")),
        )

    def response(self, result: Any, request: RequestInfo) -> ResponseInfo:
        """Read a ``Message`` / ``BetaMessage`` (or its dict form)."""
        read = fields_of(result)
        info = ResponseInfo(response_id=read("id"), model=read("model"))
        if isinstance(reason := read("stop_reason"), str):
            info.finish_reasons.append(reason)
        _read_usage(info, read("usage"))
        content = list(read("content") or ())
        for block in content:
            _read_block(info, block, request)
        _read_edits(info, read("context_management"))
        info.echo = ({"role": "assistant", "content": content},)
        return info

    def stream_reader(self, request: RequestInfo) -> AnthropicStream:
        """A reader of raw ``message_*`` / ``content_block_*`` events."""
        return AnthropicStream(request)


def _read_usage(info: ResponseInfo, usage: Any) -> None:
    """Merge ``usage`` into ``info`` (a ``message_delta`` may omit what ``message_start`` said)."""
    if usage is None:
        return
    field = fields_of(usage)
    uncached = as_count(field("input_tokens"))
    write = as_count(field("cache_creation_input_tokens"))
    read = as_count(field("cache_read_input_tokens"))
    if uncached is not None or write is not None or read is not None:
        if uncached is None and info.input_tokens is not None:
            uncached = (
                info.input_tokens - (info.cache_write_tokens or 0) - (info.cache_read_tokens or 0)
            )
        write = write if write is not None else info.cache_write_tokens
        read = read if read is not None else info.cache_read_tokens
        info.input_tokens = (uncached or 0) + (write or 0) + (read or 0)
        info.cache_write_tokens, info.cache_read_tokens = write, read
    if (output := as_count(field("output_tokens"))) is not None:
        info.output_tokens = output
    details = field("output_tokens_details")
    if (thinking := as_count(field_of(details, "thinking_tokens"))) is not None:
        info.reasoning_tokens = thinking


def _read_block(info: ResponseInfo, block: Any, request: RequestInfo) -> None:
    read = fields_of(block)
    kind = read("type")
    if kind == "tool_use" or kind == "server_tool_use":
        name = str(read("name"))
        info.tool_calls.append(name)
        # Every call's input is encoded: shell and editor tools are categorised by it, and
        # every call is keyed by it for rediscovery (lineage.rediscovery).
        info.tool_arguments.append(_json(read("input")))
    elif kind == "text":
        text = read("text")
        if isinstance(text, str):
            info.output_text.append(text)
    elif kind == "compaction":
        info.compactions.append(_compaction(read("content"), request))


def _compaction(content: Any, request: RequestInfo) -> ServerCompaction:
    summary = content if isinstance(content, str) else None
    return ServerCompaction(
        mode=CompactionMode.SERVER,
        trigger=CompactionTrigger.SUMMARIZE if request.compaction_call else CompactionTrigger.AUTO,
        summary=summary,
        failed=summary is None,
    )


def _read_edits(info: ResponseInfo, management: Any) -> None:
    """Applied context edits, all of one response recorded as one ``prune``."""
    if management is None:
        return
    edits = list(field_of(management, "applied_edits") or ())
    if not edits:
        return
    kinds = sorted({str(field_of(e, "type")) for e in edits})
    freed = sum(as_count(field_of(e, "cleared_input_tokens")) or 0 for e in edits)
    cleared = sum(
        (as_count(field_of(e, "cleared_tool_uses")) or 0)
        + (as_count(field_of(e, "cleared_thinking_turns")) or 0)
        for e in edits
    )
    after = info.input_tokens
    info.compactions.append(
        ServerCompaction(
            mode=CompactionMode.PRUNE,
            trigger="+".join(kinds),
            tokens_before=None if after is None else after + freed,
            tokens_after=after,
            cleared=cleared,
        )
    )


# What ``json.dumps(value, default=str)`` builds on every call, built once.
_ENCODER = json.JSONEncoder(default=str)


def _json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return _ENCODER.encode(plain(value))
    except (TypeError, ValueError):
        return None


class AnthropicStream:
    """Accumulates raw Messages stream events (one dict lookup and a few appends each)."""

    __slots__ = ("_blocks", "_info", "_json", "_management", "_request", "_texts")

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self._info = ResponseInfo()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._texts: dict[int, list[str]] = {}
        self._management: Any = None

    def on_event(self, event: Any) -> None:
        """Take one raw event."""
        handler = _HANDLERS.get(getattr(event, "type", None) or "")
        if handler is not None:
            handler(self, event)

    def _message_start(self, event: Any) -> None:
        message = event.message
        self._info.response_id = field_of(message, "id")
        self._info.model = field_of(message, "model")
        _read_usage(self._info, field_of(message, "usage"))

    def _block_start(self, event: Any) -> None:
        block = plain(event.content_block)
        if isinstance(block, dict):
            self._blocks[event.index] = dict(block)

    def _block_delta(self, event: Any) -> None:
        delta = event.delta
        kind = getattr(delta, "type", None)
        if kind == "text_delta":
            self._texts.setdefault(event.index, []).append(delta.text)
        elif kind == "input_json_delta":
            self._json.setdefault(event.index, []).append(delta.partial_json)
        elif kind == "compaction_delta":
            block = self._blocks.setdefault(event.index, {"type": "compaction"})
            block["content"] = delta.content

    def _message_delta(self, event: Any) -> None:
        reason = getattr(event.delta, "stop_reason", None)
        if isinstance(reason, str):
            self._info.finish_reasons = [reason]
        _read_usage(self._info, getattr(event, "usage", None))
        if getattr(event, "context_management", None) is not None:
            self._management = event.context_management

    def result(self) -> ResponseInfo:
        """The response as far as it was read, blocks rebuilt as the SDK would."""
        info = self._info
        info.tool_calls, info.tool_arguments, info.compactions = [], [], []
        info.output_text = []
        content = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            if index in self._texts:
                block["text"] = "".join(self._texts[index])
            if index in self._json:
                block["input"] = _parse_json("".join(self._json[index]))
            content.append(block)
            _read_block(info, block, self._request)
        _read_edits(info, self._management)
        info.echo = ({"role": "assistant", "content": content},)
        return info


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except (ValueError, RecursionError):  # an input nested deeper than the reader goes
        return {}


_HANDLERS = {
    "message_start": AnthropicStream._message_start,
    "content_block_start": AnthropicStream._block_start,
    "content_block_delta": AnthropicStream._block_delta,
    "message_delta": AnthropicStream._message_delta,
}
