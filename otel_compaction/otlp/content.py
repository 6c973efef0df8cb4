"""What captured content says about a call, in every dialect's form; LiteLLM's raw spans.

Read by :mod:`~otel_compaction.otlp.dialects` for a span whose content was captured
(``gen_ai.input.messages`` and friends, OpenLLMetry's older ``gen_ai.prompt.N.*``,
OpenInference's ``llm.input_messages.N.message.*``) and for LiteLLM's
``raw_gen_ai_request`` spans (the provider's request and response as Python ``repr``
text). Nothing is parsed past :data:`MAX_CONTENT_CHARS`.
"""

from __future__ import annotations

import ast
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from otel_compaction import semconv as sc
from otel_compaction.otlp.values import str_of, word_of


class CallFacts(Protocol):
    """What this module fills in of a call's facts (``otlp.dialects.CallFacts``; a protocol
    here, so that the two modules do not import each other)."""

    dialect: str
    finish: str | None
    response_id: str | None
    tools_offered: bool | None
    system_key: int | None
    task_key: int | None
    message_count: int | None
    last_user: str | None
    output_text: str | None
    compacted: bool
    model: str | None


MAX_CONTENT_CHARS = 1_000_000
"""Content attributes longer than this are not parsed (their size alone says nothing)."""


class Captured(NamedTuple):
    """``gen_ai.input.messages`` and ``gen_ai.output.messages`` of one span, each parsed
    once (:func:`json_value`: None when absent, too long or not JSON) and shared by every
    reader of the span's content. Read only: the readers never change what they are given."""

    input: Any
    output: Any


def captured(attrs: Mapping[str, bytes]) -> Captured:
    """The span's message attributes, parsed (once: pass the result to every reader)."""
    return Captured(
        json_value(attrs.get(sc.GEN_AI_INPUT_MESSAGES)),
        json_value(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES)),
    )


def read_content(
    attrs: Mapping[str, bytes], facts: CallFacts, content: Captured | None = None
) -> None:
    """Fill the facts that only captured content gives (nothing when none was captured);
    ``content``: the span's :func:`captured`, parsed here when not given."""
    if content is None:
        content = captured(attrs)
    messages = _messages(attrs, content.input)
    # None when nothing says: the official instrumentation records no tool definitions.
    facts.tools_offered = _tools_offered(attrs)
    if messages is None:
        return
    instructions = str_of(attrs.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS))
    _fill_content(facts, messages, instructions)
    facts.output_text = _output_text(attrs, content.output)
    if any(kind == "compaction" for kind in _part_types(content)):
        facts.compacted = True


def _fill_content(
    facts: CallFacts, messages: list[tuple[str, str]], instructions: str | None = None
) -> None:
    """System prompt, task, last user message and message count from (role, text) pairs."""
    system = [text for role, text in messages if role in ("system", "developer")]
    if instructions:
        system.insert(0, instructions)
    rest = [(role, text) for role, text in messages if role not in ("system", "developer")]
    facts.system_key = _hash("\n".join(system))
    users = [text for role, text in rest if role == "user"]
    facts.task_key = _hash(users[0][:2000]) if users else None
    facts.last_user = users[-1][:4000] if users else None
    facts.message_count = len(rest)


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "replace"))


def json_value(raw: bytes | None) -> Any:
    """A JSON attribute's value, or None (not a string, too long, not JSON)."""
    text = str_of(raw)
    if text is None or len(text) > MAX_CONTENT_CHARS:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _messages(attrs: Mapping[str, bytes], parsed: Any) -> list[tuple[str, str]] | None:
    """(role, text) of each input message, from whichever form the dialect used
    (``parsed``: ``gen_ai.input.messages``, parsed)."""
    if isinstance(parsed, list):
        return [_message(m) for m in parsed if isinstance(m, dict)]
    for prefix, role_key, content_key in (
        (sc.OPENINFERENCE_INPUT_MESSAGES, "message.role", "message.content"),
        (sc.GEN_AI_PROMPT_PREFIX, "role", "content"),
    ):
        indexed = _indexed(attrs, prefix, role_key, content_key)
        if indexed is not None:
            return indexed
    return None


def _message(message: Mapping[str, Any]) -> tuple[str, str]:
    role = str(message.get("role") or "")
    parts = message.get("parts")
    if isinstance(parts, list):
        return role, "\n".join(_part_text(p) for p in parts if isinstance(p, dict))
    content = message.get("content")
    return role, content if isinstance(content, str) else json.dumps(content, default=str)


def _part_text(part: Mapping[str, Any]) -> str:
    for key in ("content", "response", "result", "arguments"):
        value = part.get(key)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, default=str)
    return ""


def _indexed(
    attrs: Mapping[str, bytes], prefix: str, role_key: str, content_key: str
) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    for i in range(10_000):
        role = str_of(attrs.get(f"{prefix}{i}.{role_key}"))
        if role is None:
            break
        out.append((role, str_of(attrs.get(f"{prefix}{i}.{content_key}")) or ""))
    return out or None


def _tools_offered(attrs: Mapping[str, bytes]) -> bool | None:
    """True when the request's tool definitions were recorded; None when nothing says."""
    definitions = json_value(attrs.get(sc.GEN_AI_TOOL_DEFINITIONS))
    if isinstance(definitions, list):
        return bool(definitions)
    for key in (sc.OPENINFERENCE_TOOL_PREFIX + "0.tool.json_schema", sc.LLM_FUNCTIONS_PREFIX):
        if key in attrs:
            return True
    return None


def _output_text(attrs: Mapping[str, bytes], parsed: Any) -> str | None:
    if isinstance(parsed, list):
        texts = [_message(m)[1] for m in parsed if isinstance(m, dict)]
        return "\n".join(texts) or None
    for key in (sc.OPENINFERENCE_OUTPUT_CONTENT, sc.GEN_AI_COMPLETION_CONTENT):
        text = str_of(attrs.get(key))
        if text is not None:
            return text
    return None


def _part_types(content: Captured) -> list[str]:
    out: list[str] = []
    for parsed in content:
        if not isinstance(parsed, list):
            continue
        for message in parsed:
            parts = message.get("parts") if isinstance(message, dict) else None
            if isinstance(parts, list):
                out += [str(p.get("type")) for p in parts if isinstance(p, dict)]
    return out


def tool_calls(content: Captured) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """The tool calls the response asked for (``tool_call`` parts of
    ``gen_ai.output.messages``): their names and inputs as JSON text (None when a call
    records none), for rediscovery's keys (``lineage.rediscovery.call_key``) and the
    phase; empty when the output was not captured."""
    parsed = content.output
    names: list[str] = []
    arguments: list[str | None] = []
    for part in _parts(parsed):
        name = part.get("name")
        if part.get("type") != "tool_call" or not isinstance(name, str) or not name:
            continue
        names.append(name)
        value = part.get("arguments")
        if value is None or isinstance(value, str):
            arguments.append(value)
        else:
            arguments.append(json.dumps(value, sort_keys=True, default=str))
    return tuple(names), tuple(arguments)


def tool_result_chars(content: Captured) -> tuple[int, ...]:
    """The size in characters of each tool result new in the request (the
    ``tool_call_response`` parts after its last assistant message), oldest first."""
    parsed = content.input
    if not isinstance(parsed, list):
        return ()
    last = max((i for i, m in enumerate(parsed) if _role(m) == "assistant"), default=-1)
    return tuple(
        len(_part_text(part))
        for part in _parts(parsed[last + 1 :])
        if part.get("type") == "tool_call_response"
    )


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


def _parts(messages: Any) -> list[Mapping[str, Any]]:
    """Every part of every message of a ``gen_ai.*.messages`` value, in order."""
    if not isinstance(messages, list):
        return []
    out: list[Mapping[str, Any]] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if isinstance(parts, list):
            out += [p for p in parts if isinstance(p, dict)]
    return out


# ----------------------------------------------------------------------- LiteLLM

_USAGE_FIGURE = re.compile(r"'(prompt_tokens|input_tokens|cache_read_input_tokens|"
                           r"cache_creation_input_tokens|cached_tokens)': (\d+)")  # fmt: skip
_FINISH = re.compile(r"'finish_reason': '(\w+)'")


def litellm_primary_spans(view: Any) -> set[bytes]:
    """The ids of LiteLLM's own call spans (``litellm_request``) in a request's view."""
    return {
        span.span_id
        for rs in view.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
        if span.name == sc.LITELLM_REQUEST_SPAN
    }


def _raw_prefix(attrs: Mapping[str, bytes]) -> str | None:
    """``llm.<provider>.`` of a LiteLLM ``raw_gen_ai_request`` span (its usage's key)."""
    for key in attrs:
        if key.startswith("llm.") and key.endswith(".usage"):
            return key[: -len("usage")]
    return None


def raw_request_tokens(attrs: Mapping[str, bytes]) -> int | None:
    """The context of a LiteLLM ``raw_gen_ai_request`` span, from the provider's usage as
    LiteLLM wrote it (a Python ``repr`` of the usage object): OpenAI's ``prompt_tokens``
    (cache included), or Anthropic's ``input_tokens`` plus its cache figures."""
    prefix = _raw_prefix(attrs)
    text = str_of(attrs.get(f"{prefix}usage")) if prefix else None
    if text is None:
        return None
    figures = {name: int(value) for name, value in _USAGE_FIGURE.findall(text[:4096])}
    if "prompt_tokens" in figures:
        return figures["prompt_tokens"]
    if "input_tokens" in figures:
        cache = ("cache_read_input_tokens", "cache_creation_input_tokens")
        return figures["input_tokens"] + sum(figures.get(k, 0) for k in cache)
    return None


def read_raw_request(attrs: Mapping[str, bytes], facts: CallFacts) -> None:
    """A LiteLLM ``raw_gen_ai_request`` span's facts (the provider's request and response,
    as Python ``repr`` text): response id, finish reason, model, tools, messages, reply."""
    prefix = _raw_prefix(attrs) or "llm."
    facts.dialect = sc.Dialect.LITELLM.value
    facts.response_id = facts.response_id or str_of(attrs.get(f"{prefix}id"))
    facts.model = facts.model or word_of(attrs.get(f"{prefix}model"))
    choices = str_of(attrs.get(f"{prefix}choices")) or ""
    finish = _FINISH.search(choices[:4096])
    if finish is not None:
        facts.finish = finish.group(1).lower()
    if f"{prefix}tools" in attrs:
        facts.tools_offered = True
    messages = _literal(attrs.get(f"{prefix}messages"))
    if isinstance(messages, list):
        _fill_content(facts, [_message(m) for m in messages if isinstance(m, dict)])
    replies = _literal(attrs.get(f"{prefix}choices"))
    if isinstance(replies, list) and replies and isinstance(replies[0], dict):
        message = replies[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            facts.output_text = message["content"]


def _literal(raw: bytes | None) -> Any:
    text = str_of(raw)
    if text is None or len(text) > MAX_CONTENT_CHARS:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
