"""Realistic agent histories and a canned LLM API for the instrumentation-overhead benchmark.

A history is what a coding agent sends on each call: the task with the project context, a
reminder, then one (assistant ``tool_use``, user ``tool_result``) pair per earlier step, each
tool result a few KB of file contents, grep hits or test output. ``length`` counts the
messages of the request (the anthropic ``system`` field and the openai system message are extra).

Every conversation carries a tag in its task and in each tool result, so no two conversations
share content: an instrumentation that caches by content gets no help across conversations.

The canned API answers like the real one (headers, JSON body, server-sent events) through
``httpx2.MockTransport``; its cost is the same for every configuration.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import httpx2

Message = dict[str, Any]
Handler = Callable[[httpx2.Request], httpx2.Response]

MODEL_ANTHROPIC = "claude-sonnet-4-6"
MODEL_OPENAI = "gpt-4.1"
SYSTEM_PROMPT = (
    "You are a coding agent working in a Python repository. Use the tools to read, search, "
    "edit and test the code. Keep going until the task is done, then summarise the change. "
) * 8
TOOLS = ("read_file", "grep", "bash", "edit_file", "glob")
_TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    name: {
        "type": "object",
        "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}},
        "required": ["path"],
    }
    for name in TOOLS
}
_POOL_SIZE = 32
_SEED = 1234


def _make_pool() -> tuple[str, ...]:
    """Tool-output bodies of 1 to 5 KB, shaped like source code and test output."""
    rng = random.Random(_SEED)
    words = ("def", "return", "self", "value", "config", "assert", "None", "import", "turn", "span")
    bodies = []
    for _ in range(_POOL_SIZE):
        target = rng.randint(1024, 5 * 1024)
        lines: list[str] = []
        size = 0
        while size < target:
            line = f"{rng.randint(1, 900):4d}  " + " ".join(
                rng.choices(words, k=rng.randint(3, 12))
            )
            lines.append(line)
            size += len(line) + 1
        bodies.append("\n".join(lines))
    return tuple(bodies)


POOL = _make_pool()


def _tool_input(step: int) -> tuple[str, dict[str, str]]:
    name = TOOLS[step % len(TOOLS)]
    return name, {"path": f"src/module_{step % 97}.py", "pattern": f"def handler_{step % 13}"}


def _step_texts(tag: str, step: int) -> tuple[str, str]:
    """The assistant's short reasoning and the tool's output for one agent step."""
    name, _ = _tool_input(step)
    thought = f"Step {step}: I will run {name} to check how the handler treats this case."
    output = f"[{tag} step {step}] {name} output\n{POOL[(step * 7) % _POOL_SIZE]}"
    return thought, output


def _preamble(tag: str) -> tuple[str, str]:
    """The first user message (the task, then the project context) and a reminder message.

    The task comes first so each conversation opens differently, as independent agent runs do.
    """
    task = f"Task {tag}: the retry handler drops the last event of a stream; find out why."
    opening = f"{task}\n\n<project-context>\n{POOL[0]}\n</project-context>"
    reminder = "<system-reminder>The user has src/retry.py open in the editor.</system-reminder>"
    return opening, reminder


def anthropic_history(tag: str, length: int) -> list[Message]:
    """An anthropic ``messages`` list of exactly ``length`` messages (even, at least 4)."""
    opening, reminder = _preamble(tag)
    messages: list[Message] = [
        {"role": "user", "content": opening},
        {"role": "user", "content": reminder},
    ]
    for step in range((length - 2) // 2):
        thought, output = _step_texts(tag, step)
        name, tool_input = _tool_input(step)
        tool_id = f"toolu_{tag}_{step}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": thought},
                    {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
            }
        )
    return messages


def openai_history(tag: str, length: int) -> list[Message]:
    """An openai chat ``messages`` list: a system message plus ``length`` messages."""
    opening, reminder = _preamble(tag)
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": opening},
        {"role": "user", "content": reminder},
    ]
    for step in range((length - 2) // 2):
        thought, output = _step_texts(tag, step)
        name, tool_input = _tool_input(step)
        call_id = f"call_{tag}_{step}"
        call = {"name": name, "arguments": json.dumps(tool_input)}
        messages.append(
            {
                "role": "assistant",
                "content": thought,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return messages


def anthropic_tools() -> list[dict[str, Any]]:
    """The tool definitions an agent sends with every anthropic call."""
    return [
        {"name": n, "description": f"{n} tool", "input_schema": s} for n, s in _TOOL_SCHEMAS.items()
    ]


def openai_tools() -> list[dict[str, Any]]:
    """The tool definitions an agent sends with every openai chat call."""
    return [
        {"type": "function", "function": {"name": n, "description": f"{n} tool", "parameters": s}}
        for n, s in _TOOL_SCHEMAS.items()
    ]


# --------------------------------------------------------------------------- #
# The canned API.
# --------------------------------------------------------------------------- #

_REPLY_WORDS = ("The", "handler", "returns", "early", "when", "the", "buffer", "is", "empty", "so")
REPLY_TEXT = " ".join(_REPLY_WORDS * 4)
REPLY_ARGS = json.dumps({"path": "src/retry.py", "pattern": "def flush"})
TEXT_CHUNKS = 40  # one text delta per word, as the real APIs stream them
JSON_CHUNKS = 6
OUTPUT_TOKENS = 57


def _chunks(text: str, count: int) -> list[str]:
    step = max(1, -(-len(text) // count))
    return [text[i : i + step] for i in range(0, len(text), step)]


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def _anthropic_message(input_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": MODEL_ANTHROPIC,
        "content": [
            {"type": "text", "text": REPLY_TEXT},
            {
                "type": "tool_use",
                "id": "toolu_reply",
                "name": "grep",
                "input": json.loads(REPLY_ARGS),
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": OUTPUT_TOKENS,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _anthropic_stream(input_tokens: int) -> bytes:
    start = _anthropic_message(input_tokens)
    start.update(content=[], stop_reason=None)
    start["usage"] = {**start["usage"], "output_tokens": 1}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", _block_start(0, {"type": "text", "text": ""})),
        ("ping", {"type": "ping"}),
    ]
    for piece in _chunks(REPLY_TEXT, TEXT_CHUNKS):
        events.append(("content_block_delta", _delta(0, {"type": "text_delta", "text": piece})))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    tool = {"type": "tool_use", "id": "toolu_reply", "name": "grep", "input": {}}
    events.append(("content_block_start", _block_start(1, tool)))
    for piece in _chunks(REPLY_ARGS, JSON_CHUNKS):
        json_delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(("content_block_delta", _delta(1, json_delta)))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    stop = {"stop_reason": "tool_use", "stop_sequence": None}
    usage = {"output_tokens": OUTPUT_TOKENS}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _openai_completion(prompt_tokens: int) -> dict[str, Any]:
    call = {"name": "grep", "arguments": REPLY_ARGS}
    message = {
        "role": "assistant",
        "content": REPLY_TEXT,
        "refusal": None,
        "tool_calls": [{"id": "call_reply", "type": "function", "function": call}],
    }
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": MODEL_OPENAI,
        "choices": [choice],
        "usage": _openai_usage(prompt_tokens),
    }


def _openai_usage(prompt_tokens: int) -> dict[str, int]:
    total = prompt_tokens + OUTPUT_TOKENS
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": total,
    }


def _openai_stream(prompt_tokens: int) -> bytes:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_760_000_000}
    base["model"] = MODEL_OPENAI

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**base, "choices": [choice]}

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk({"role": "assistant", "content": ""}))
    ]
    events += [(None, chunk({"content": piece})) for piece in _chunks(REPLY_TEXT, TEXT_CHUNKS)]
    head = {"index": 0, "id": "call_reply", "type": "function", "function": {"name": "grep"}}
    events.append((None, chunk({"tool_calls": [head]})))
    for piece in _chunks(REPLY_ARGS, JSON_CHUNKS):
        events.append(
            (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        )
    events.append((None, chunk({}, "tool_calls")))
    events.append((None, {**base, "choices": [], "usage": _openai_usage(prompt_tokens)}))
    events.append((None, "[DONE]"))
    return _sse(events)


def canned_handler(provider: str) -> Handler:
    """A transport handler answering ``provider``'s chat endpoint like the real API.

    Input tokens are the request body's size / 4, so pressure grows with the history as it would.
    """

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = request.content
        tokens = len(body) // 4
        stream = b'"stream":true' in body or b'"stream": true' in body
        headers = {"request-id": "req_bench", "x-request-id": "req_bench"}
        if stream:
            content = (
                _anthropic_stream(tokens) if provider == "anthropic" else _openai_stream(tokens)
            )
            headers["content-type"] = "text/event-stream"
            return httpx2.Response(200, headers=headers, content=content)
        reply = (
            _anthropic_message(tokens) if provider == "anthropic" else _openai_completion(tokens)
        )
        return httpx2.Response(200, headers=headers, json=reply)

    return handle
