"""Reading a LiteLLM call: its call details (the callbacks' ``kwargs``) and its response.

LiteLLM hands every callback the same dict of call details (``model_call_details``):
``model`` without its provider prefix, ``custom_llm_provider`` (the prefix: ``anthropic``,
``openai``...), ``messages`` (the OpenAI-shaped history it will send, system prompt
included), ``input`` (a Responses call's input), ``optional_params`` (``max_tokens``,
``temperature``, ``instructions``, ``extra_body``...), ``litellm_params`` (``metadata``,
``model_info``, ``api_base``) and ``litellm_call_id``. Whatever the provider, its response
is a ``ModelResponse`` in the Chat Completions shape, or a ``ResponsesAPIResponse``;
LiteLLM's usage counts cached tokens in ``prompt_tokens`` (for Anthropic too: it adds
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to the uncached input), so
``prompt_tokens`` is the context's size as ``gen_ai.usage.input_tokens`` means it.

Nothing here imports LiteLLM: everything is read by field name from plain dicts and the
pydantic objects LiteLLM returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.instrument._api import (
    RequestInfo,
    ResponseInfo,
    StreamReader,
    field_of,
)
from otel_compaction.instrument._openai import OpenAIChat, OpenAIResponses

RESPONSES_CALL_TYPES = frozenset({"responses", "aresponses"})
"""``call_type`` values of ``litellm.responses`` / ``litellm.aresponses``."""

SUMMARIZER_USAGE_IDS = frozenset({"condenser"})
"""``usage_id`` values of an LLM that summarizes the agent's history (OpenHands' condenser
LLM is ``usage_id="condenser"``)."""

SUMMARIZER_TAGS = frozenset({"type:condenser", "usage_id:condenser"})
"""Metadata tags that mark a summarizer's call. The OpenHands CLI sends its condenser LLM's
calls with ``extra_body={"metadata": {"tags": [..., "type:condenser", ...], ...}}``
(``get_llm_metadata(model_name=..., llm_type="condenser")``)."""

_CHAT = OpenAIChat()
_RESPONSES = OpenAIResponses()


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def provider_name(details: Mapping[str, Any]) -> str:
    """``gen_ai.provider.name``: LiteLLM's provider (the model's prefix), ``litellm`` if none."""
    provider = details.get("custom_llm_provider")
    if not isinstance(provider, str) or not provider:
        provider = _mapping(details.get("litellm_params")).get("custom_llm_provider")
    return provider if isinstance(provider, str) and provider else "litellm"


def is_responses(details: Mapping[str, Any]) -> bool:
    """Whether the call is ``litellm.responses`` / ``aresponses``."""
    return details.get("call_type") in RESPONSES_CALL_TYPES


def metadata_of(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every metadata dict the caller gave: ``metadata=`` (``litellm_params.metadata``),
    ``litellm_metadata``, and ``extra_body={"metadata": ...}`` (how the OpenHands CLI
    sends its LLMs' ``litellm_extra_body``)."""
    params = _mapping(details.get("litellm_params"))
    optional = _mapping(details.get("optional_params"))
    found = [
        params.get("metadata"),
        params.get("litellm_metadata"),
        _mapping(optional.get("extra_body")).get("metadata"),
        _mapping(details.get("extra_body")).get("metadata"),
    ]
    return [m for m in found if isinstance(m, Mapping) and m]


def is_summarizer(details: Mapping[str, Any]) -> bool:
    """Whether the caller's metadata marks the call as a summarizer's (a condenser LLM)."""
    for metadata in metadata_of(details):
        if metadata.get("usage_id") in SUMMARIZER_USAGE_IDS:
            return True
        tags = metadata.get("tags")
        if isinstance(tags, list | tuple) and any(t in SUMMARIZER_TAGS for t in tags):
            return True
    return False


def configured_window(details: Mapping[str, Any]) -> int | None:
    """The context window the call was configured with: ``model_info={"max_input_tokens":
    N}`` in its params (LiteLLM's per-deployment model info), else None (the callback
    then asks LiteLLM's own model table, ``_handler.window_of``)."""
    info = _mapping(_mapping(details.get("litellm_params")).get("model_info"))
    window = as_count(info.get("max_input_tokens"))
    return window if window else None


def _server(details: Mapping[str, Any]) -> dict[str, Any]:
    base = _mapping(details.get("litellm_params")).get("api_base")
    if not isinstance(base, str) or not base:
        return {}
    try:
        parts = urlsplit(base)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {sc.SERVER_ADDRESS: parts.hostname, sc.SERVER_PORT: port} if parts.hostname else {}


def _attributes(details: Mapping[str, Any], provider: str, model: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
        sc.GEN_AI_PROVIDER_NAME: provider,
        **_server(details),
    }
    if model is not None:
        attributes[sc.GEN_AI_REQUEST_MODEL] = model
    optional = _mapping(details.get("optional_params"))
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if (value := as_count(optional.get(name))) is not None:
            attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] = value
            break
    temperature = optional.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        attributes[sc.GEN_AI_REQUEST_TEMPERATURE] = float(temperature)
    return attributes


def _sequence(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value) if isinstance(value, list | tuple) else None


class LiteLLMApi:
    """The extraction for LiteLLM calls (a ``ProviderApi``: ``instance`` is unused, the
    ``kwargs`` are LiteLLM's call details)."""

    def request(self, instance: Any, kwargs: Mapping[str, Any]) -> RequestInfo:
        """Read the call details at pre-call time (never mutating them)."""
        del instance
        model = kwargs.get("model")
        model = model if isinstance(model, str) and model else None
        provider = provider_name(kwargs)
        info = RequestInfo(
            provider=provider,
            operation=sc.OPERATION_CHAT,
            model=model,
            attributes=_attributes(kwargs, provider, model),
            stream=kwargs.get("stream") is True,
        )
        if not is_responses(kwargs):
            info.messages = _sequence(kwargs.get("messages"))
            return info
        optional = _mapping(kwargs.get("optional_params"))
        items = _sequence(kwargs.get("input")) or _sequence(kwargs.get("messages")) or []
        previous = optional.get("previous_response_id")
        info.system = optional.get("instructions")
        info.chains_responses = True
        if isinstance(previous, str) and previous:
            info.previous_response_id = previous
            info.new_items = items
        else:
            info.messages = items
        return info

    def response(self, result: Any, request: RequestInfo) -> ResponseInfo:
        """Read a ``ModelResponse`` (Chat Completions shape) or a ``ResponsesAPIResponse``."""
        if field_of(result, "object") == "response" or field_of(result, "output") is not None:
            info = _RESPONSES.response(result, request)
        else:
            info = _CHAT.response(result, request)
        _usage(info, field_of(result, "usage"))
        return info

    def stream_reader(self, request: RequestInfo) -> StreamReader:
        """Never used: LiteLLM hands its callbacks the stream's assembled response."""
        raise NotImplementedError("LiteLLM reports a stream's assembled response")


def _usage(info: ResponseInfo, usage: Any) -> None:
    """Usage under either API's names, and the cache figures LiteLLM adds for Anthropic."""
    if usage is None:
        return
    if info.input_tokens is None:
        info.input_tokens = as_count(field_of(usage, "prompt_tokens"))
    if info.output_tokens is None:
        info.output_tokens = as_count(field_of(usage, "completion_tokens"))
    details = field_of(usage, "prompt_tokens_details") or field_of(usage, "input_tokens_details")
    if info.cache_read_tokens is None:
        info.cache_read_tokens = as_count(field_of(usage, "cache_read_input_tokens"))
    if info.cache_read_tokens is None:
        info.cache_read_tokens = as_count(field_of(details, "cached_tokens"))
    if not info.cache_write_tokens:
        written = as_count(field_of(usage, "cache_creation_input_tokens"))
        if written is None:
            written = as_count(field_of(details, "cache_write_tokens"))
        info.cache_write_tokens = written if written is not None else info.cache_write_tokens


@dataclass(frozen=True, slots=True)
class Ephemeral:
    """What a framework lays out afresh in each request and never keeps in its history
    (aider's file contents, repository map and reminders): left out of the history the
    conversation is tracked by, so the next request, laid out anew, is no rewrite.

    Args:
        rendered: contents of the messages rendered for this request only.
        suffixed: the last message's content as sent, and as the history keeps it (a
            reminder appended to it for this request).
    """

    rendered: frozenset[str] = frozenset()
    suffixed: tuple[str, str] | None = None


def as_kept(messages: Sequence[Any], ephemeral: Ephemeral) -> list[Any]:
    """``messages`` as the framework's history holds them (see :class:`Ephemeral`)."""
    rendered = ephemeral.rendered
    kept = [m for m in messages if not (rendered and field_of(m, "content") in rendered)]
    if ephemeral.suffixed is not None and kept:
        sent, original = ephemeral.suffixed
        last = kept[-1]
        if isinstance(last, Mapping) and last.get("content") == sent:
            kept[-1] = {**last, "content": original}
    return kept
