"""The Anthropic Messages API of the fake: JSON and SSE bodies, context management."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_compaction.testing._llm_wire import (
    RecordedRequest,
    Reply,
    WireResponse,
    estimate_tokens,
    json_response,
    new_id,
    sse_response,
    tool_call_id,
)

DEFAULT_COMPACT_TRIGGER = 150_000
DEFAULT_CLEAR_TRIGGER = 100_000
DEFAULT_CLEAR_KEEP = 3


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the fake server does with one request before sampling."""

    input_tokens: int
    compaction: str | None
    compaction_input_tokens: int
    applied_edits: tuple[Mapping[str, Any], ...]
    pure_compaction: bool
    pause: bool


def messages(request: RecordedRequest, reply: Reply) -> WireResponse:
    """Answer ``POST /v1/messages`` (plain and beta) as JSON or as an SSE stream."""
    plan = _plan(request.body, reply)
    blocks = _content_blocks(plan, reply)
    message = _message(request, reply, plan, blocks)
    headers = {"request-id": new_id("req_")}
    if request.stream:
        wire = sse_response(_stream_events(message, blocks), reply.stream_error)
        return WireResponse(wire.status, {**wire.headers, **headers}, wire.body)
    return json_response(message, headers)


def count_tokens(request: RecordedRequest, reply: Reply) -> WireResponse:
    """Answer ``POST /v1/messages/count_tokens`` with the same estimate as a call."""
    del reply
    tokens = _context_tokens(request.body)
    return json_response({"input_tokens": tokens})


def _context_tokens(body: Mapping[str, Any]) -> int:
    """Tokens the server sees: system, tools, and messages from the last compaction on."""
    kept = _after_last_compaction(list(body.get("messages") or ()))
    return max(
        1, estimate_tokens(body.get("system")) + estimate_tokens(body.get("tools")) + _tokens(kept)
    )


def _tokens(messages: Sequence[Any]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def _after_last_compaction(messages: list[Any]) -> list[Any]:
    """The server drops every block before the last compaction block it is sent back."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content") if isinstance(messages[index], dict) else None
        if not isinstance(content, list):
            continue
        for position in range(len(content) - 1, -1, -1):
            block = content[position]
            if (
                isinstance(block, dict)
                and block.get("type") == "compaction"
                and block.get("content")
            ):
                head = {**messages[index], "content": content[position:]}
                return [head, *messages[index + 1 :]]
    return messages


def _edits(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    management = body.get("context_management")
    if not isinstance(management, Mapping):
        return []
    return [e for e in management.get("edits") or () if isinstance(e, Mapping)]


def _trigger(edit: Mapping[str, Any], default: int) -> int:
    trigger = edit.get("trigger")
    if isinstance(trigger, Mapping) and isinstance(trigger.get("value"), int):
        return int(trigger["value"])
    return default


def _plan(body: Mapping[str, Any], reply: Reply) -> _Plan:
    tokens = _context_tokens(body)
    applied: list[Mapping[str, Any]] = list(reply.applied_edits)
    compaction = reply.compaction
    pause = reply.pause_after_compaction
    for edit in _edits(body):
        kind = edit.get("type")
        if kind == "clear_tool_uses_20250919" and not reply.applied_edits:
            cleared = _clear_tool_uses(body, edit, tokens)
            if cleared is not None:
                applied.append(cleared)
                tokens -= int(cleared["cleared_input_tokens"])
        elif kind == "compact_20260112" and tokens >= _trigger(edit, DEFAULT_COMPACT_TRIGGER):
            compaction = compaction or _default_summary(body)
            pause = pause or bool(edit.get("pause_after_compaction"))
    pure = isinstance(body.get("compaction"), Mapping)
    if pure:
        compaction = compaction or _default_summary(body)
    return _Plan(
        input_tokens=max(1, tokens),
        compaction=compaction,
        compaction_input_tokens=tokens,
        applied_edits=tuple(applied),
        pure_compaction=pure,
        pause=pause or pure,
    )


def _clear_tool_uses(
    body: Mapping[str, Any], edit: Mapping[str, Any], tokens: int
) -> dict[str, Any] | None:
    """Clear all but the last ``keep`` tool results once the trigger is reached."""
    if tokens < _trigger(edit, DEFAULT_CLEAR_TRIGGER):
        return None
    keep = edit.get("keep")
    keep_n = int(keep["value"]) if isinstance(keep, Mapping) else DEFAULT_CLEAR_KEEP
    results = [
        block
        for message in body.get("messages") or ()
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    ]
    cleared = results[: max(0, len(results) - keep_n)]
    if not cleared:
        return None
    return {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": len(cleared),
        "cleared_input_tokens": sum(estimate_tokens(block.get("content")) for block in cleared),
    }


def _default_summary(body: Mapping[str, Any]) -> str:
    count = len(body.get("messages") or ())
    return f"Summary of the conversation so far ({count} messages): the task and the work done."


def _content_blocks(plan: _Plan, reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if plan.compaction is not None:
        blocks.append(
            {
                "type": "compaction",
                "content": None if reply.compaction_failed else plan.compaction,
                "encrypted_content": None,
                "signature": new_id("sig_"),
            }
        )
        if plan.pause:
            return blocks
    if reply.text:
        blocks.append({"type": "text", "text": reply.text, "citations": None})
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_call_id(call, "toolu_"),
                "name": call.name,
                "input": dict(call.arguments),
            }
        )
    return blocks


def _stop_reason(plan: _Plan, reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    if plan.compaction is not None and plan.pause:
        return "compaction"
    return "tool_use" if reply.tool_calls else "end_turn"


def _usage(
    request: RecordedRequest, reply: Reply, plan: _Plan, blocks: list[Any]
) -> dict[str, Any]:
    total = plan.input_tokens
    if plan.compaction is not None and not plan.pure_compaction:
        # Sampling goes on in the closed context: system, tools and the summary.
        total = (
            estimate_tokens(request.body.get("system"))
            + estimate_tokens(request.body.get("tools"))
            + estimate_tokens(plan.compaction)
        )
    total = reply.input_tokens if reply.input_tokens is not None else total
    cached = reply.cache_read_tokens + reply.cache_write_tokens
    output = reply.output_tokens
    if output is None:
        output = max(1, sum(estimate_tokens(b) for b in blocks if b.get("type") != "compaction"))
    usage: dict[str, Any] = {
        "input_tokens": max(0, total - cached),
        "output_tokens": output,
        "cache_creation_input_tokens": reply.cache_write_tokens,
        "cache_read_input_tokens": reply.cache_read_tokens,
        "service_tier": "standard",
    }
    if plan.compaction is not None:
        usage["iterations"] = _iterations(plan, usage)
    return usage


def _iterations(plan: _Plan, usage: Mapping[str, Any]) -> list[dict[str, Any]]:
    summary = {
        "type": "compaction",
        "input_tokens": plan.compaction_input_tokens,
        "output_tokens": estimate_tokens(plan.compaction),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if plan.pause:
        return [summary]
    sampling = {
        "type": "message",
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
    }
    return [summary, sampling]


def _message(
    request: RecordedRequest, reply: Reply, plan: _Plan, blocks: list[dict[str, Any]]
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": blocks,
        "stop_reason": _stop_reason(plan, reply),
        "stop_sequence": None,
        "usage": _usage(request, reply, plan, blocks),
    }
    if "context_management" in request.body or plan.applied_edits:
        message["context_management"] = {"applied_edits": [dict(e) for e in plan.applied_edits]}
    return message


def _stream_events(
    message: Mapping[str, Any], blocks: list[dict[str, Any]]
) -> list[tuple[str | None, Any]]:
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {k: v for k, v in usage.items() if k != "iterations"} | {"output_tokens": 1},
    }
    start.pop("context_management", None)
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(blocks):
        events.extend(_block_events(index, block))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": dict(usage),
    }
    if "context_management" in message:
        delta["context_management"] = message["context_management"]
    events.append(("message_delta", delta))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(index: int, block: Mapping[str, Any]) -> list[tuple[str | None, Any]]:
    kind = block["type"]
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": "", "citations": None}
        deltas: list[dict[str, Any]] = [
            {"type": "text_delta", "text": piece} for piece in _pieces(block["text"])
        ]
    elif kind == "tool_use":
        start = {**block, "input": {}}
        text = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(text)]
    else:
        start = {**block, "content": None}
        deltas = [
            {
                "type": "compaction_delta",
                "content": block.get("content"),
                "encrypted_content": block.get("encrypted_content"),
            }
        ]
    events: list[tuple[str | None, Any]] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    for delta in deltas:
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _pieces(text: str, count: int = 3) -> list[str]:
    """``text`` in up to ``count`` chunks, as a stream delivers it."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]
