"""Other instrumentations' inference spans: one ``CallFacts`` whatever the dialect.

A fleet's agents are traced by the official GenAI instrumentations, OpenLLMetry,
OpenInference, LiteLLM's callback or the LLM SDKs' own tracing; each names the
same facts differently (docs/processor.md, "Other instrumentations"). This
module reads one span of any of them into the facts the processor's inference
(:mod:`~otel_compaction.otlp.inferred`) needs:

* the context: ``gen_ai.usage.input_tokens`` (cache reads included, as the
  official conventions, OpenLLMetry and the anthropic SDK report it), else
  ``gen_ai.usage.prompt_tokens`` (older OpenLLMetry, LiteLLM), else OpenInference's
  ``llm.token_count.prompt``; a cache read larger than the input figure says the
  input was reported without it, and it is added;
* the conversation key, first found: ``gen_ai.conversation.id``, OpenInference's
  ``session.id``, OpenLLMetry's association properties, then the trace with the
  caller's span (two agents under their own spans in one trace stay two); a call
  with no parent span (no application root: every call its own trace) is *loose*,
  grouped later by service, model and a time gap (``inferred.LooseGrouper``);
* whether tools were offered, the system prompt, the first and last user
  messages and the reply's text, when content is captured
  (``gen_ai.input.messages`` and friends, ``gen_ai.prompt.N.*``,
  ``llm.input_messages.N.message.*``);
* ``gen_ai.conversation.compacted`` and compaction message parts.

Only spans that are none of ours reach here (``extract`` reads our own first).
"""

from __future__ import annotations

import ast
import json
import re
import threading
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_compaction import semconv as sc
from otel_compaction.otlp.values import int_of, plain, str_of, word_of

MAX_CONTENT_CHARS = 1_000_000
"""Content attributes longer than this are not parsed (their size alone says nothing)."""
STOP_REASONS = frozenset({"stop", "end_turn", "completed", "length", "max_tokens"})
"""Finish reasons of a reply that asked for no tool."""
ASSOCIATION_KEYS = tuple(
    f"{sc.TRACELOOP_ASSOCIATION_PREFIX}{name}"
    for name in ("conversation_id", "session_id", "thread_id", "chat_id")
)


_UNREAD_SPANS: Counter[str] = Counter()
"""Inference spans seen that the processor could not use (no input token count), by
dialect, since the process started: the processor's ``/metrics`` reports them
(``compaction.processor.unread_spans``)."""
_unread_lock = threading.Lock()


def unread_spans() -> dict[str, int]:
    """How many inference spans of each dialect could not be used so far (a copy)."""
    with _unread_lock:
        return dict(_UNREAD_SPANS)


def count_unread(name: str, attrs: Mapping[str, bytes]) -> None:
    """Count an inference span that says nothing the engine can use (no input tokens)."""
    operation = word_of(attrs.get(sc.GEN_AI_OPERATION_NAME))
    if operation is not None and operation not in sc.INFERENCE_OPERATIONS:
        return  # a tool or agent span: not an inference span
    kind = word_of(attrs.get(sc.OPENINFERENCE_SPAN_KIND))
    if kind is not None and kind.upper() != "LLM":
        return
    with _unread_lock:
        _UNREAD_SPANS[dialect_of(name, attrs)] += 1


@dataclass(slots=True)
class CallFacts:
    """What one inference span of another instrumentation says about its call."""

    dialect: str
    key_source: str
    context_tokens: int
    output_tokens: int | None = None
    operation: str | None = None
    finish: str | None = None
    response_id: str | None = None
    tools_offered: bool | None = None
    system_key: int | None = None
    task_key: int | None = None
    message_count: int | None = None
    last_user: str | None = None
    output_text: str | None = None
    compacted: bool = False
    loose: bool = False
    service: str | None = None
    model: str | None = None


def dialect_of(name: str, attrs: Mapping[str, bytes]) -> str:
    """Which instrumentation wrote a span, from its name and attributes."""
    if sc.OPENINFERENCE_SPAN_KIND in attrs:
        return sc.Dialect.OPENINFERENCE.value
    if name.startswith("anthropic.messages") or sc.ANTHROPIC_REQUEST_ID in attrs:
        return sc.Dialect.ANTHROPIC_SDK.value
    if (
        name.startswith("litellm")
        or name == sc.LITELLM_RAW_REQUEST_SPAN
        or sc.LITELLM_CALL_ID in attrs
    ):
        return sc.Dialect.LITELLM.value
    if name.startswith(("openai.", "anthropic.")) or sc.GEN_AI_USAGE_TOTAL_TOKENS in attrs:
        return sc.Dialect.OPENLLMETRY.value
    return sc.Dialect.GENAI.value


def input_tokens(attrs: Mapping[str, bytes]) -> int | None:
    """The call's context in tokens (cache reads included), or None when not reported."""
    get = attrs.get
    tokens = int_of(get(sc.GEN_AI_USAGE_INPUT_TOKENS))
    if tokens is None:
        tokens = int_of(get(sc.GEN_AI_USAGE_PROMPT_TOKENS))
    if tokens is None:
        tokens = int_of(get(sc.OPENINFERENCE_PROMPT_TOKENS))
    if tokens is None:
        return None
    cached = int_of(get(sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS)) or int_of(
        get(sc.OPENINFERENCE_CACHE_READ_TOKENS)
    )
    if cached is not None and cached > tokens:
        # Reported apart (Anthropic's own figures): the context is both.
        written = int_of(get(sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS)) or 0
        tokens += cached + max(written, 0)
    return max(tokens, 0)


def read_call(
    name: str,
    attrs: Mapping[str, bytes],
    tokens: int,
    trace_id: bytes,
    parent: bytes,
) -> tuple[str, CallFacts]:
    """The conversation key and the facts of one inference span of another instrumentation."""
    get = attrs.get
    facts = CallFacts(
        dialect=dialect_of(name, attrs),
        key_source=sc.KeySource.TRACE.value,
        context_tokens=tokens,
        output_tokens=int_of(get(sc.GEN_AI_USAGE_OUTPUT_TOKENS))
        or int_of(get(sc.GEN_AI_USAGE_COMPLETION_TOKENS))
        or int_of(get(sc.OPENINFERENCE_COMPLETION_TOKENS)),
        operation=word_of(get(sc.GEN_AI_OPERATION_NAME)),
        finish=_finish(get(sc.GEN_AI_RESPONSE_FINISH_REASONS))
        or _finish(get(sc.ANTHROPIC_STOP_REASON))
        or _finish(get(sc.OPENINFERENCE_FINISH_REASON)),
        response_id=str_of(get(sc.GEN_AI_RESPONSE_ID)),
        compacted=_flag(get(sc.GEN_AI_CONVERSATION_COMPACTED)),
        model=word_of(get(sc.GEN_AI_REQUEST_MODEL))
        or word_of(get(sc.GEN_AI_RESPONSE_MODEL))
        or word_of(get(sc.OPENINFERENCE_MODEL_NAME)),
    )
    if name == sc.LITELLM_RAW_REQUEST_SPAN:
        read_raw_request(attrs, facts)
    else:
        read_content(attrs, facts)
    key = _key(attrs, facts)
    if key is None:
        if parent:
            key = f"{trace_id.hex()}/{parent.hex()}"
            facts.key_source = sc.KeySource.TRACE_PARENT.value
        else:
            key = trace_id.hex()
            facts.loose = True
    return key, facts


def _key(attrs: Mapping[str, bytes], facts: CallFacts) -> str | None:
    for attr, source in (
        (sc.GEN_AI_CONVERSATION_ID, sc.KeySource.CONVERSATION_ID),
        (sc.SESSION_ID, sc.KeySource.SESSION_ID),
        *((k, sc.KeySource.ASSOCIATION) for k in ASSOCIATION_KEYS),
    ):
        value = str_of(attrs.get(attr))
        if value is not None:
            facts.key_source = source.value
            return value
    return None


def _flag(raw: bytes | None) -> bool:
    return raw is not None and plain(raw) is True


def _finish(raw: bytes | None) -> str | None:
    value = plain(raw) if raw is not None else None
    if isinstance(value, str) and value.startswith("["):
        value = _json(raw)  # LiteLLM writes the list as JSON text
    if isinstance(value, list) and value:
        value = value[-1]
    return value.lower() if isinstance(value, str) else None


# ----------------------------------------------------------------------- content


def read_content(attrs: Mapping[str, bytes], facts: CallFacts) -> None:
    """Fill the facts that only captured content gives (nothing when none was captured)."""
    messages = _messages(attrs)
    # None when nothing says: the official instrumentation records no tool definitions.
    facts.tools_offered = _tools_offered(attrs)
    if messages is None:
        return
    instructions = str_of(attrs.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS))
    _fill_content(facts, messages, instructions)
    facts.output_text = _output_text(attrs)
    if any(kind == "compaction" for kind in _part_types(attrs)):
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


def _json(raw: bytes | None) -> Any:
    text = str_of(raw)
    if text is None or len(text) > MAX_CONTENT_CHARS:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _messages(attrs: Mapping[str, bytes]) -> list[tuple[str, str]] | None:
    """(role, text) of each input message, from whichever form the dialect used."""
    parsed = _json(attrs.get(sc.GEN_AI_INPUT_MESSAGES))
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
    definitions = _json(attrs.get(sc.GEN_AI_TOOL_DEFINITIONS))
    if isinstance(definitions, list):
        return bool(definitions)
    for key in (sc.OPENINFERENCE_TOOL_PREFIX + "0.tool.json_schema", sc.LLM_FUNCTIONS_PREFIX):
        if key in attrs:
            return True
    return None


def _output_text(attrs: Mapping[str, bytes]) -> str | None:
    parsed = _json(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES))
    if isinstance(parsed, list):
        texts = [_message(m)[1] for m in parsed if isinstance(m, dict)]
        return "\n".join(texts) or None
    for key in (sc.OPENINFERENCE_OUTPUT_CONTENT, sc.GEN_AI_COMPLETION_CONTENT):
        text = str_of(attrs.get(key))
        if text is not None:
            return text
    return None


def _part_types(attrs: Mapping[str, bytes]) -> list[str]:
    out: list[str] = []
    for key in (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES):
        parsed = _json(attrs.get(key))
        if not isinstance(parsed, list):
            continue
        for message in parsed:
            parts = message.get("parts") if isinstance(message, dict) else None
            if isinstance(parts, list):
                out += [str(p.get("type")) for p in parts if isinstance(p, dict)]
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
