"""Shared pieces of the fake LLM API: script types, token estimates, wire helpers."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.signals.tokens import estimate_tokens as text_tokens

_counter = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the scripted model makes: the tool's name and its arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the scripted model answers to one request.

    Args:
        text: the assistant's text (empty for a tool-call-only turn).
        tool_calls: tool calls, after the text.
        status: an HTTP status other than 200 answers with the API's error envelope
            (429 ``rate_limit_error``, 500 ``api_error``, 529 ``overloaded_error``...).
        error_message: the error's message.
        retry_after: seconds, sent as ``retry-after`` with an error.
        timeout: the request times out (``ReadTimeout`` through a mock transport;
            the local server closes the connection without answering).
        compaction: a summary: the response carries a server-side compaction
            (an Anthropic ``compaction`` block, an OpenAI ``compaction`` item).
        compaction_failed: the Anthropic compaction block has ``content: null``.
        pause_after_compaction: stop after the compaction block (``stop_reason``
            ``compaction``), as the ``compact_20260112`` edit option does.
        applied_edits: Anthropic ``context_management.applied_edits`` to report as is.
        input_tokens / output_tokens: override the estimates.
        cache_read_tokens / cache_write_tokens: part of the input reported as
            read from / written to the prompt cache.
        reasoning_tokens: OpenAI reasoning tokens in the output.
        stop_reason: override the stop / finish reason.
        cache_miss_reason: OpenAI ``prompt_cache_diagnostics`` miss reason
            (e.g. ``context_compacted``).
        stream_error: a streamed reply breaks off after its first events with an
            ``error`` event of this type (e.g. ``overloaded_error``).
    """

    text: str = "OK"
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    error_message: str | None = None
    retry_after: float | None = None
    timeout: bool = False
    compaction: str | None = None
    compaction_failed: bool = False
    pause_after_compaction: bool = False
    applied_edits: tuple[Mapping[str, Any], ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    stop_reason: str | None = None
    cache_miss_reason: str | None = None
    stream_error: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the fake answered: which API, the path, headers (lowercased) and JSON body."""

    api: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]

    @property
    def stream(self) -> bool:
        """Whether the request asked for a server-sent event stream."""
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str:
        """The requested model (``unknown`` when absent)."""
        return str(self.body.get("model") or "unknown")


@dataclass(frozen=True, slots=True)
class WireResponse:
    """An HTTP response as bytes: status, headers, body; or a timeout."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    timeout: bool = False


def estimate_tokens(value: Any) -> int:
    """Tokens of a JSON value: its compact JSON characters / 4, rounded up (0 for None)."""
    if value is None:
        return 0
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text_tokens(text)


def new_id(prefix: str) -> str:
    """A unique, readable id such as ``msg_fake000001``."""
    return f"{prefix}fake{next(_counter):06d}"


def json_response(payload: Mapping[str, Any], headers: Mapping[str, str] = {}) -> WireResponse:
    """A 200 ``application/json`` response."""
    return WireResponse(
        200,
        {"content-type": "application/json", **headers},
        json.dumps(payload).encode(),
    )


def sse_response(events: list[tuple[str | None, Any]], error: str | None = None) -> WireResponse:
    """A 200 ``text/event-stream`` response of ``(event name, data)`` pairs.

    ``data`` is JSON-encoded unless it is a string (``[DONE]``). With ``error``,
    the stream breaks off after its first two events with an ``error`` event.
    """
    if error is not None:
        failure = {"type": "error", "error": {"type": error, "message": f"fake {error}"}}
        events = [*events[:2], ("error", failure)]
    parts = []
    for name, data in events:
        encoded = data if isinstance(data, str) else json.dumps(data)
        prefix = f"event: {name}\n" if name else ""
        parts.append(f"{prefix}data: {encoded}\n\n")
    return WireResponse(
        200,
        {"content-type": "text/event-stream", "cache-control": "no-cache"},
        "".join(parts).encode(),
    )


_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("authentication_error", "invalid_api_key"),
    404: ("not_found_error", "not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("api_error", "server_error"),
    529: ("overloaded_error", "server_error"),
}


def error_response(
    api: str, status: int, message: str | None = None, retry_after: float | None = None
) -> WireResponse:
    """The error envelope of ``api``'s provider for ``status``."""
    anthropic_type, openai_type = _ERROR_TYPES.get(status, ("api_error", "server_error"))
    text = message or f"fake {anthropic_type} ({status})"
    if api.startswith("anthropic"):
        payload: dict[str, Any] = {
            "type": "error",
            "error": {"type": anthropic_type, "message": text},
        }
    else:
        payload = {"error": {"message": text, "type": openai_type, "code": openai_type}}
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return WireResponse(status, headers, json.dumps(payload).encode())


def tool_call_id(call: ToolCall, prefix: str) -> str:
    """The call's own id, or a fresh one with the provider's prefix."""
    return call.id or new_id(prefix)
