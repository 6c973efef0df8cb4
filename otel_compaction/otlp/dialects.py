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
* the finish reason (``gen_ai.response.finish_reasons``, the anthropic SDK's
  ``anthropic.message.stop_reason``, OpenInference's ``llm.finish_reason``) and
  ``gen_ai.response.id`` (two instrumentations of one call);
* whether tools were offered, the system prompt, the first and last user
  messages and the reply's text, when content is captured, and LiteLLM's
  ``raw_gen_ai_request`` spans (:mod:`~otel_compaction.otlp.content`);
* ``gen_ai.conversation.compacted`` and compaction message parts.

Only spans that are none of ours reach here (``extract`` reads our own first).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from otel_compaction import semconv as sc
from otel_compaction.otlp.content import Captured, json_value, read_content, read_raw_request
from otel_compaction.otlp.values import int_of, plain, str_of, word_of

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
    content: Captured | None = None,
) -> tuple[str, CallFacts]:
    """The conversation key and the facts of one inference span of another instrumentation
    (``content``: the span's parsed messages, ``content.captured``, when already read)."""
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
        read_content(attrs, facts, content)
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
        value = json_value(raw)  # LiteLLM writes the list as JSON text
    if isinstance(value, list) and value:
        value = value[-1]
    return value.lower() if isinstance(value, str) else None
