"""Content capture: messages and summaries on spans, only when allowed, always capped.

Off unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` allows span
content (``Settings.capture_content``). Messages follow the GenAI conventions'
JSON shape (``role`` + ``parts``); each part's text is cut so the whole value
stays within ``Settings.content_max_chars``, with the truncation marked in the
text and by ``compaction.content.truncated``. Only message content is read:
headers, API keys and client options never are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.emit.attributes import truncate_content
from otel_compaction.inference.messages import plain, text_of

_MIN_PART = 64


def _part(block: Any) -> dict[str, Any]:
    block = plain(block)
    if isinstance(block, str):
        return {"type": "text", "content": block}
    if not isinstance(block, Mapping):
        return {"type": "text", "content": text_of(block)}
    kind = block.get("type")
    if kind in ("tool_use", "function_call", "server_tool_use"):
        return {
            "type": "tool_call",
            "id": block.get("id") or block.get("call_id"),
            "name": block.get("name"),
            "arguments": block.get("input", block.get("arguments")),
        }
    if kind in ("tool_result", "function_call_output"):
        return {
            "type": "tool_call_response",
            "id": block.get("tool_use_id") or block.get("call_id"),
            "response": text_of(block.get("content", block.get("output"))),
        }
    if kind == "compaction":
        return {"type": "compaction", "content": block.get("content")}
    return {"type": "text", "content": text_of(block)}


def message_parts(message: Any) -> dict[str, Any]:
    """One message (any of the three wire shapes) as ``{"role", "parts"}``."""
    message = plain(message)
    if not isinstance(message, Mapping):
        return {"role": "user", "parts": [_part(message)]}
    role = message.get("role") or message.get("type") or "user"
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, list | tuple):
        parts.extend(_part(block) for block in content)
    elif content is not None:
        parts.append(_part(content))
    for call in message.get("tool_calls") or ():
        call = plain(call)
        function = call.get("function") or {}
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                      "arguments": function.get("arguments")})  # fmt: skip
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": message.get("tool_call_id"),
                  "response": text_of(content)}]  # fmt: skip
    elif not isinstance(message.get("role"), str):
        parts = [_part(message)]
        role = "assistant" if role in ("function_call", "compaction") else "user"
    return {"role": str(role), "parts": parts}


def _cut(parts: list[dict[str, Any]], limit: int) -> bool:
    """Cut each part's text fields to ``limit``; True if anything was cut."""
    cut = False
    for part in parts:
        for name in ("content", "response", "arguments"):
            value = part.get(name)
            if not isinstance(value, str):
                value = None if value is None else json.dumps(value, default=str)
            if value is not None and len(value) > limit:
                part[name], _ = truncate_content(value, limit)
                cut = True
    return cut


def capped_json(messages: Sequence[dict[str, Any]], max_chars: int) -> tuple[str, bool]:
    """JSON of ``messages`` within about ``max_chars``, and whether anything was cut."""
    text = json.dumps(messages, default=str, ensure_ascii=False)
    if len(text) <= max_chars:
        return text, False
    parts = [p for m in messages for p in m["parts"]]
    limit = max(_MIN_PART, max_chars // max(len(parts), 1))
    _cut(parts, limit)
    text = json.dumps(messages, default=str, ensure_ascii=False)
    if len(text) > max_chars:
        # Too many parts even when cut: keep the newest messages that fit.
        kept: list[dict[str, Any]] = []
        for message in reversed(messages):
            if len(json.dumps([message, *kept], default=str)) > max_chars and kept:
                break
            kept.insert(0, message)
        text = json.dumps(kept, default=str, ensure_ascii=False)
    return text, True


def inference_content(
    system: Any,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    finish: Sequence[str],
    max_chars: int,
) -> dict[str, AttributeValue]:
    """``gen_ai.system_instructions`` / ``.input.messages`` / ``.output.messages``, capped."""
    out: dict[str, AttributeValue] = {}
    truncated = False
    if system:
        text, cut = truncate_content(text_of(system), max_chars)
        out[sc.GEN_AI_SYSTEM_INSTRUCTIONS] = json.dumps([{"type": "text", "content": text}])
        truncated |= cut
    if inputs:
        text, cut = capped_json([message_parts(m) for m in inputs], max_chars)
        out[sc.GEN_AI_INPUT_MESSAGES] = text
        truncated |= cut
    if outputs:
        messages = [message_parts(m) for m in outputs]
        if finish:
            for message in messages:
                message["finish_reason"] = finish[0]
        text, cut = capped_json(messages, max_chars)
        out[sc.GEN_AI_OUTPUT_MESSAGES] = text
        truncated |= cut
    if truncated:
        out[sc.CONTENT_TRUNCATED] = True
    return out


def summary_content(summary: str | None, max_chars: int) -> dict[str, AttributeValue]:
    """``compaction.summary.text`` of a compaction span, capped."""
    if not summary:
        return {}
    text, cut = truncate_content(summary, max_chars)
    out: dict[str, AttributeValue] = {sc.SUMMARY_TEXT: text}
    if cut:
        out[sc.CONTENT_TRUNCATED] = True
    return out
