"""What the instrumentation reads from one API call, whatever the provider.

Each provider module (``_anthropic``, ``_openai``) turns the SDK's arguments,
response objects and stream events into these plain records; everything after
that (conversations, compactions, spans, metrics) is provider-agnostic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.semconv import CallUsage, CompactionMode


def field_of(value: Any, name: str) -> Any:
    """``value.name`` or ``value[name]``: SDK objects and plain dicts alike (None if absent)."""
    if value is None:
        return None
    shape = _SHAPES.get(type(value)) or _shape_of(type(value))
    if shape is _MAPPING:
        return value.get(name)
    if shape is not _OTHER:
        # A pydantic v2 model: its fields live in the instance dict. A name it lacks is
        # answered here, not by getattr: pydantic's __getattr__ raises and catches an
        # AttributeError for it (a beta-only field read on a plain Message: ~3 µs).
        found = value.__dict__.get(name, _ABSENT)
        if found is not _ABSENT:
            return found
        if name not in shape and name[:1] != "_":
            extra = getattr(value, "__pydantic_extra__", None)
            return extra.get(name) if extra else None
    return getattr(value, name, None)


def fields_of(value: Any) -> Callable[[str], Any]:
    """A reader of ``value``'s fields: ``read(name)`` answers what ``field_of(value, name)``
    does. For a mapping or a pydantic v2 model it is one dict's ``get`` (a response is read
    some fifteen fields at a time); other objects are read by :func:`field_of`.

    Only for data fields: a method or property of a model is not in its instance dict.
    """
    if value is None:
        return _NOTHING.get
    kind = type(value)
    shape = _SHAPES.get(kind) or _shape_of(kind)  # a call less: four readers a call
    if shape is _MAPPING:
        return value.get  # type: ignore[no-any-return]
    if shape is not _OTHER:
        extra = getattr(value, "__pydantic_extra__", None)
        fields: dict[str, Any] = {**value.__dict__, **extra} if extra else value.__dict__
        return fields.get
    return functools.partial(field_of, value)


_NOTHING: dict[str, Any] = {}
_ABSENT = object()
_MAPPING: frozenset[str] = frozenset({"<mapping>"})
_OTHER: frozenset[str] = frozenset({"<other>"})


def _shape_of(kind: type) -> frozenset[str]:
    """:func:`_shape` of ``kind``, remembered (up to ``_MAX_KINDS`` types)."""
    shape = _SHAPES.get(kind)
    if shape is None:
        shape = _shape(kind)
        if len(_SHAPES) < _MAX_KINDS:
            _SHAPES[kind] = shape
    return shape


def _shape(kind: type) -> frozenset[str]:
    """How :func:`field_of` reads a type: as a mapping, as a pydantic v2 model (the names
    its class defines, which getattr must resolve), or by getattr."""
    if issubclass(kind, Mapping):
        return _MAPPING
    if hasattr(kind, "__pydantic_extra__") and hasattr(kind, "__pydantic_fields__"):
        return frozenset(dir(kind))
    return _OTHER


# How each type is read, by type: the ABC check costs more than the read itself, and a
# response is read field by field (some twenty reads per call on the same few SDK classes).
_SHAPES: dict[type, frozenset[str]] = {dict: _MAPPING}
_MAX_KINDS = 512


def server_attributes(instance: Any) -> dict[str, AttributeValue]:
    """``server.address`` / ``server.port`` of the SDK resource's client base URL.

    The returned dict may be shared between calls: copy it before changing it.
    """
    url = getattr(getattr(instance, "_client", None), "base_url", None)
    cached = _SERVERS.get(id(url))
    if cached is not None and cached[0] is url:
        return cached[1]
    attributes = _server_attributes(url)
    if url is not None and len(_SERVERS) < _MAX_SERVERS:
        # Held with the URL itself, so the id cannot be reused while the entry lives.
        _SERVERS[id(url)] = (url, attributes)
    return attributes


def _server_attributes(url: Any) -> dict[str, AttributeValue]:
    host = getattr(url, "host", None)
    if not isinstance(host, str) or not host:
        return {}
    port = getattr(url, "port", None) or (443 if getattr(url, "scheme", "") == "https" else 80)
    return {sc.SERVER_ADDRESS: host, sc.SERVER_PORT: int(port)}


# The attributes of each client base URL seen (a client's URL object is set once, at
# construction or by its setter), so the URL is not parsed again on every call.
_SERVERS: dict[int, tuple[Any, dict[str, AttributeValue]]] = {}
_MAX_SERVERS = 64


def offers_tools(*values: Any) -> bool:
    """Whether a request's ``tools`` (or ``functions``) argument offers any: a non-empty
    list or tuple (the SDKs' "not given" sentinels and None offer none)."""
    return any(isinstance(v, list | tuple) and len(v) > 0 for v in values)


@dataclass(slots=True)
class RequestInfo:
    """One API call's request, as far as the analysis needs it.

    Args:
        provider: ``gen_ai.provider.name``.
        operation: ``gen_ai.operation.name``.
        model: the requested model.
        attributes: ``gen_ai.request.*`` and ``server.*`` attributes.
        system: the system prompt, in the provider's shape (part of the anchor).
        messages: the full history sent, or None when the provider keeps it
            (``previous_response_id``, ``conversation``) or it is not a sequence.
        new_items: the items sent when ``messages`` is None (all new content).
        stream: the call streams its response.
        conversation_hint: a conversation id the provider or client gives.
        previous_response_id: OpenAI chaining to an earlier response.
        compaction_call: the call only compacts (``responses.compact``,
            Anthropic ``compaction=``): not a turn of the agent.
        chains_responses: a later call can continue this one by its response id
            (OpenAI Responses ``previous_response_id``), so the id is remembered.
        tools: whether the request offers the model tools (None: not read); a
            summarizer's call offers none (``inference.summarizer``).
    """

    provider: str
    operation: str
    model: str | None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    system: Any = None
    messages: Sequence[Any] | None = None
    new_items: Sequence[Any] = ()
    stream: bool = False
    conversation_hint: str | None = None
    previous_response_id: str | None = None
    compaction_call: bool = False
    chains_responses: bool = False
    tools: bool | None = None


@dataclass(slots=True)
class ServerCompaction:
    """A compaction the provider reports in its response.

    ``summary`` is the summary text (Anthropic) or an opaque stand-in that
    identifies the compaction item when it is sent back (OpenAI).
    """

    mode: CompactionMode
    trigger: str
    summary: str | None = None
    summary_is_text: bool = True
    failed: bool = False
    compaction_id: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    cleared: int | None = None
    call_usage: CallUsage | None = None
    """What the compacting call's own usage counts, when the provider leaves it open."""


@dataclass(slots=True)
class ResponseInfo:
    """One API call's response (or as much of a stream as was read)."""

    response_id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    tool_calls: list[str] = field(default_factory=list)
    tool_arguments: list[str | None] = field(default_factory=list)
    compactions: list[ServerCompaction] = field(default_factory=list)
    echo: tuple[Any, ...] = ()
    """The response as the agent will likely append it to its history."""
    output_text: list[str] = field(default_factory=list)
    conversation_id: str | None = None
    """A conversation id the provider reports (OpenAI ``conversation.id``)."""


class StreamReader(Protocol):
    """Accumulates stream events into a :class:`ResponseInfo`; cheap per event."""

    def on_event(self, event: Any) -> None:
        """Take one event as the SDK yields it."""

    def result(self) -> ResponseInfo:
        """What the events read so far say."""


class ProviderApi(Protocol):
    """The extraction for one instrumented API (one provider, one endpoint family)."""

    def request(self, instance: Any, kwargs: Mapping[str, Any]) -> RequestInfo:
        """Read the call's arguments (never mutating them)."""

    def response(self, result: Any, request: RequestInfo) -> ResponseInfo:
        """Read a non-streaming response object."""

    def stream_reader(self, request: RequestInfo) -> StreamReader:
        """A fresh accumulator for this call's stream."""
