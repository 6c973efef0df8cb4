"""The OpenAI Chat Completions and Responses APIs of the fake, compaction included."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping, Sequence
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


def _output_tokens(reply: Reply, parts: Sequence[Any]) -> int:
    if reply.output_tokens is not None:
        return reply.output_tokens
    return max(1, sum(estimate_tokens(p) for p in parts)) + reply.reasoning_tokens


# --------------------------------------------------------------------------- #
# Chat Completions
# --------------------------------------------------------------------------- #


def chat_completions(request: RecordedRequest, reply: Reply) -> WireResponse:
    """Answer ``POST /v1/chat/completions`` as JSON or as a chunk stream."""
    body = request.body
    prompt = reply.input_tokens
    if prompt is None:
        prompt = max(1, estimate_tokens(body.get("messages")) + estimate_tokens(body.get("tools")))
    calls = [
        {
            "id": tool_call_id(call, "call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
        }
        for call in reply.tool_calls
    ]
    completion = _output_tokens(reply, [reply.text, calls] if calls else [reply.text])
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
    }
    finish = reply.stop_reason or ("tool_calls" if calls else "stop")
    head = {"id": new_id("chatcmpl-"), "created": int(time.time()), "model": request.model}
    if request.stream:
        chunks = _chat_chunks(head, reply.text, calls, finish, usage, body)
        return sse_response(chunks, reply.stream_error)
    message = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": None,
        "tool_calls": calls or None,
    }
    return json_response(
        {
            **head,
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": usage,
        }
    )


def _chat_chunks(
    head: Mapping[str, Any],
    text: str,
    calls: list[dict[str, Any]],
    finish: str,
    usage: Mapping[str, Any],
    body: Mapping[str, Any],
) -> list[tuple[str | None, Any]]:
    def chunk(delta: Mapping[str, Any], reason: str | None = None) -> tuple[str | None, Any]:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": reason, "logprobs": None}
        return None, {**head, "object": "chat.completion.chunk", "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(text)]
    for index, call in enumerate(calls):
        function = call["function"]
        start = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [start]}))
        for piece in _pieces(function["arguments"]):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, finish))
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        chunks.append(
            (None, {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        )
    chunks.append((None, "[DONE]"))
    return chunks


# --------------------------------------------------------------------------- #
# Responses
# --------------------------------------------------------------------------- #


def _items_after_last_compaction(items: list[Any]) -> list[Any]:
    for index in range(len(items) - 1, -1, -1):
        if isinstance(items[index], Mapping) and items[index].get("type") == "compaction":
            return items[index:]
    return items


def _input_items(body: Mapping[str, Any]) -> list[Any]:
    value = body.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value or ())


def _input_tokens(body: Mapping[str, Any]) -> int:
    items = _items_after_last_compaction(_input_items(body))
    return max(
        1,
        estimate_tokens(body.get("instructions"))
        + estimate_tokens(body.get("tools"))
        + sum(estimate_tokens(i) for i in items),
    )


def _compaction_threshold(body: Mapping[str, Any]) -> int | None:
    for entry in body.get("context_management") or ():
        if isinstance(entry, Mapping) and entry.get("type") == "compaction":
            threshold = entry.get("compact_threshold")
            return int(threshold) if isinstance(threshold, int) else 0
    return None


def _compaction_item(summary: str) -> dict[str, Any]:
    return {
        "id": new_id("cmp_"),
        "type": "compaction",
        "encrypted_content": base64.b64encode(summary.encode()).decode(),
        "created_by": "fake",
    }


def _usage(input_tokens: int, output_tokens: int, reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {
            "cached_tokens": reply.cache_read_tokens,
            "cache_write_tokens": reply.cache_write_tokens,
        },
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def _output_items(reply: Reply, compaction: str | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if compaction is not None:
        items.append(_compaction_item(compaction))
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": new_id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    for call in reply.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": new_id("fc_"),
                "call_id": tool_call_id(call, "call_"),
                "name": call.name,
                "arguments": json.dumps(dict(call.arguments)),
                "status": "completed",
            }
        )
    return items


def responses(request: RecordedRequest, reply: Reply) -> WireResponse:
    """Answer ``POST /v1/responses`` as JSON or as a semantic event stream."""
    body = request.body
    tokens = _input_tokens(body)
    threshold = _compaction_threshold(body)
    compaction = reply.compaction
    if compaction is None and threshold is not None and tokens >= threshold:
        compaction = f"Summary of {len(_input_items(body))} input items."
    output = _output_items(reply, compaction)
    if compaction is not None:
        tokens = estimate_tokens(body.get("instructions")) + estimate_tokens(output[0])
    input_tokens = reply.input_tokens if reply.input_tokens is not None else tokens
    visible = [i for i in output if i["type"] != "compaction"]
    response = _response_object(
        request, output, _usage(input_tokens, _output_tokens(reply, visible), reply)
    )
    if reply.cache_miss_reason:
        response["prompt_cache_diagnostics"] = {
            "type": "cache_miss",
            "reason": reply.cache_miss_reason,
            "cache_missed_tokens": input_tokens,
        }
    if request.stream:
        return sse_response(_response_events(response), reply.stream_error)
    return json_response(response)


def _response_object(
    request: RecordedRequest, output: list[dict[str, Any]], usage: Mapping[str, Any]
) -> dict[str, Any]:
    body = request.body
    conversation = body.get("conversation")
    if isinstance(conversation, str):
        conversation = {"id": conversation}
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": float(int(time.time())),
        "status": "completed",
        "model": request.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": list(body.get("tools") or ()),
        "temperature": body.get("temperature", 1.0),
        "top_p": 1.0,
        "instructions": body.get("instructions"),
        "previous_response_id": body.get("previous_response_id"),
        "conversation": conversation,
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "usage": dict(usage),
    }


def _response_events(response: Mapping[str, Any]) -> list[tuple[str | None, Any]]:
    sequence = iter(range(10_000))
    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(sequence), **fields}))

    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        _item_events(emit, index, item)
    emit("response.completed", response=dict(response))
    return events


def _item_events(emit: Any, index: int, item: Mapping[str, Any]) -> None:
    kind = item["type"]
    if kind == "message":
        text = item["content"][0]["text"]
        emit(
            "response.output_item.added",
            output_index=index,
            item={**item, "content": [], "status": "in_progress"},
        )
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        emit(
            "response.content_part.added",
            item_id=item["id"],
            output_index=index,
            content_index=0,
            part=empty,
        )
        for piece in _pieces(text):
            emit(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id=item["id"],
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        emit(
            "response.content_part.done",
            item_id=item["id"],
            output_index=index,
            content_index=0,
            part=item["content"][0],
        )
    elif kind == "function_call":
        emit(
            "response.output_item.added",
            output_index=index,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        for piece in _pieces(item["arguments"]):
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=piece,
            )
        emit(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            arguments=item["arguments"],
            name=item["name"],
        )
    else:
        emit("response.output_item.added", output_index=index, item=dict(item))
        emit("response.compaction.compacting", item_id=item["id"], output_index=index)
    emit("response.output_item.done", output_index=index, item=dict(item))


def responses_compact(request: RecordedRequest, reply: Reply) -> WireResponse:
    """Answer ``POST /v1/responses/compact``: the user messages, then one compaction item."""
    items = _input_items(request.body)
    users = [
        {
            "type": "message",
            "id": new_id("msg_"),
            "status": "completed",
            "role": "user",
            "content": _as_input_content(item.get("content")),
        }
        for item in items
        if isinstance(item, Mapping) and item.get("role") == "user"
    ]
    summary = reply.compaction or f"Summary of {len(items)} input items."
    output = [*users, _compaction_item(summary)]
    input_tokens = (
        reply.input_tokens if reply.input_tokens is not None else _input_tokens(request.body)
    )
    usage = _usage(input_tokens, _output_tokens(reply, [summary]), reply)
    return json_response(
        {
            "id": new_id("resp_"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": output,
            "usage": usage,
        }
    )


def _as_input_content(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [dict(part) for part in content or () if isinstance(part, Mapping)]


def _pieces(text: str, count: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]
