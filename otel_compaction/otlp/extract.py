"""Spans in, engine inputs out: turns, phase reports and compactions, each an ``Item``.

The mapping from the wire to the shared engine (``ConversationAnalyzer``):

* an inference span (``compaction.context.tokens``, or a GenAI inference
  operation with ``gen_ai.usage.input_tokens``) is a ``TurnObservation``, with
  a ``PhaseReport`` first when its phase was reported by the agent;
* a ``compaction`` span is a ``CompactionObservation`` (with the phase the
  agent reported at that moment, when the span says it was reported);
* the agents' own log events (Claude Code's, Codex's) are read in
  :mod:`~otel_compaction.otlp.agent_events` into the same items;
* anything else (HTTP spans, tool spans, our own ``compaction.finding`` spans
  coming back through a Collector loop) is not an engine input.

The conversation key is ``compaction.conversation.id``, else
``gen_ai.conversation.id``, else the trace id. Another instrumentation's inference
span (none of our attributes) is read by :mod:`~otel_compaction.otlp.dialects` into
a turn carrying its ``CallFacts`` (its own keys), which ``otlp.inferred`` turns into
turns, summarizer costs and compactions when it is applied.

Spans are read through :mod:`~otel_compaction.otlp.spanview`, where each
span's attributes are a map: the dozen values an inference span needs are
looked up and decoded, the others never become Python objects.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.model import (
    CompactionObservation,
    PhaseReport,
    SummarizerCost,
    TurnObservation,
)
from otel_compaction.otlp.content import (
    captured,
    litellm_primary_spans,
    raw_request_tokens,
    tool_calls,
    tool_result_chars,
)
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.dialects import CallFacts, count_unread, input_tokens, read_call
from otel_compaction.otlp.spanview import Position, parse_trace_view
from otel_compaction.otlp.values import (
    AttrValue,
    any_value,
    as_enum,
    as_str,
    as_strs,
    as_word,
    decoded,
    int_of,
    ints_of,
    is_number,
    str_of,
    strs_of,
    window_of,
    word_of,
)
from otel_compaction.semconv import FLAG_KEYS, CompactionMode, CompactionSource, PhaseSource
from otel_compaction.signals.tokens import tokens_for_chars


class ItemKind(enum.IntEnum):
    """What an item feeds; the value orders items of one moment: a summarizer's cost
    before the compaction it belongs to, a compaction before the turn that sees it."""

    SUMMARIZER = 0
    COMPACTION = 1
    TURN = 2


@dataclass(slots=True)
class Item:
    """One engine input taken from one span or log record.

    ``target`` is the span or log record it came from (flags are written on it
    in enrich mode) and ``position`` where that span is in its request;
    ``batch`` is the received request it belongs to. ``bare``: a compaction
    span of ours (it has a ``compaction.id``) with no ``compaction.flag.*``
    attribute, which enrich mode leaves as it is unless the processor finds
    something.
    """

    conversation_id: str
    kind: ItemKind
    turn_index: int | None
    time_ns: int
    trace_id: bytes
    span_id: bytes
    dedupe_key: int
    turn: TurnObservation | None = None
    compaction: CompactionObservation | None = None
    phase: PhaseReport | None = None
    summarizer: SummarizerCost | None = None
    provider: str | None = None
    target: Any = None
    position: Position | None = None
    batch: Any = None
    signal: Signal = Signal.TRACES
    bare: bool = False
    call: CallFacts | None = None
    """Another instrumentation's inference span (``otlp.dialects``), read by ``otlp.inferred``."""
    expanded: bool = False
    """Read by ``otlp.inferred`` already (a held call it hands back at the end)."""

    def sort_key(self) -> tuple[int, int, int]:
        """Order within a conversation: turn index (else time), compaction before turn."""
        if self.turn_index is not None:
            return (self.turn_index, int(self.kind), self.time_ns)
        return (self.time_ns, int(self.kind), 0)


_PHASE_KEYS = (
    sc.PHASE_NAME,
    sc.PHASE_SOURCE,
    sc.PHASE_NAMES,
    sc.PHASE_DISTRIBUTION,
    sc.PHASE_CONFIDENCE,
)
_COMPACTION_KEYS = (
    sc.CONVERSATION_ID,
    sc.GEN_AI_CONVERSATION_ID,
    sc.TURN_INDEX,
    sc.GEN_AI_PROVIDER_NAME,
    sc.LINEAGE_GENERATION,
    sc.COMPACTION_SOURCE,
    sc.COMPACTION_MODE,
    sc.COMPACTION_TRIGGER,
    sc.TOKENS_BEFORE,
    sc.TOKENS_AFTER,
    sc.TOKENS_AFTER_REPORTED,
    sc.TOKENS_SUMMARY,
    sc.TOKENS_RETAINED_TAIL,
    sc.TOKENS_COMPACTED,
    sc.SUMMARY_TEXT,
    sc.LINEAGE_PARENT_ID,
    sc.LINEAGE_ASSUMED,
    sc.SUMMARY_FAILED,
    sc.SUMMARY_ERROR,
    sc.COMPACTION_ID,
    sc.CONTEXT_FIXED_TOKENS,
    *_PHASE_KEYS,
)
_SPAN_KEYS = frozenset(
    {
        *_COMPACTION_KEYS,
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_REQUEST_MODEL,
        sc.GEN_AI_RESPONSE_MODEL,
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.CONTEXT_TOKENS,
        sc.CONTEXT_WINDOW,
        sc.CONTEXT_NEW_CONTENT_TOKENS,
        sc.TOOL_CALLS,
        sc.TOOL_CATEGORIES,
        sc.TOOL_CALL_KEYS,
        sc.TOOL_OUTPUT_TOKENS,
        *FLAG_KEYS,
    }
)
"""Every attribute a span's engine inputs read: a compaction's, a turn's, the flags."""
ENGINE_INPUT_KEYS = (sc.CONTEXT_TOKENS, sc.GEN_AI_USAGE_INPUT_TOKENS, sc.COMPACTION_SOURCE)
"""A span is an engine input only if it has one of these or is named ``compaction``; the
Collector configurations of tap mode filter the rest out before they reach the processor."""
_KEY_A, _KEY_B, _KEY_C = ENGINE_INPUT_KEYS  # the hot check in span_items, unrolled
_KEY_D, _KEY_E = sc.GEN_AI_USAGE_PROMPT_TOKENS, sc.OPENINFERENCE_PROMPT_TOKENS
"""Other dialects' input token counts: their spans are engine inputs too (``otlp.dialects``)."""
_OPERATION, _OI_KIND = sc.GEN_AI_OPERATION_NAME, sc.OPENINFERENCE_SPAN_KIND
_RAW = sc.LITELLM_RAW_REQUEST_SPAN
_INFERENCE_OPERATIONS = frozenset(sc.INFERENCE_OPERATIONS)
MARKERS = (b"gen_ai", b"compaction", _KEY_E.encode(), _OI_KIND.encode())
"""Bytes in every span the loop in ``span_items`` reads further: each key it tests, and the
names ``compaction`` and ``raw_gen_ai_request``, holds one. A request whose bytes hold none
(a batch of HTTP, database, RPC spans) has no engine input and no GenAI span to count:
four byte searches in C, and neither the view is parsed nor a span looked at."""
_REPORTED = PhaseSource.REPORTED.value


def pick(attributes: Any, keys: frozenset[str]) -> dict[str, AttrValue]:
    """The attributes among ``keys``, as plain Python values (one pass)."""
    return {kv.key: any_value(kv.value) for kv in attributes if kv.key in keys}


def spans_to_items(
    request: Any,
    model_windows: Mapping[str, int] | None = None,
    *,
    data: bytes | None = None,
    targets: bool = True,
) -> Iterator[Item]:
    """Every engine input in an ``ExportTraceServiceRequest``, in request order.

    The attributes are read through :mod:`~otel_compaction.otlp.spanview`
    (one lookup per wanted key, no Python work for the others). ``data`` is the
    request serialised (as received), when the caller has it already;
    ``targets=False`` leaves ``Item.target`` and ``Item.position`` None (tap
    mode writes nothing back on the spans).
    """
    return iter(span_items(request, model_windows, data=data, targets=targets))


def span_items(
    request: Any,
    model_windows: Mapping[str, int] | None = None,
    *,
    data: bytes | None = None,
    targets: bool = True,
) -> list[Item]:
    """``spans_to_items`` as a list (the pipeline's call: no generator per item)."""
    body = request.SerializeToString() if data is None else data
    if not any(marker in body for marker in MARKERS):
        return []
    view = parse_trace_view(body)
    out: list[Item] = []
    append = out.append
    primary: set[bytes] | None = None  # LiteLLM's own call spans in this request, when needed
    for i, rs in enumerate(view.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            originals = None
            for k, span in enumerate(ss.spans):
                attrs = span.attributes
                # A span with none of ENGINE_INPUT_KEYS is no engine input (a tool,
                # HTTP or agent span): three map lookups and the name, and on to the next.
                name = span.name
                if not (
                    _KEY_A in attrs
                    or _KEY_B in attrs
                    or _KEY_C in attrs
                    or _KEY_D in attrs
                    or _KEY_E in attrs
                    or name == sc.SPAN_COMPACTION
                    or name == _RAW
                ):
                    if _OPERATION in attrs or _OI_KIND in attrs:
                        count_unread(name, attrs)  # a GenAI span we cannot use
                    continue
                if name == _RAW:
                    if primary is None:
                        primary = litellm_primary_spans(view)
                    if span.parent_span_id in primary:
                        continue  # LiteLLM's own span of the call is in the request: read that
                item = _item(span, attrs, model_windows)
                if item is None:
                    continue
                if item.call is not None:
                    item.call.service = _service(rs)
                if targets:
                    if originals is None:
                        originals = request.resource_spans[i].scope_spans[j].spans
                    item.target = originals[k]
                    item.position = (i, j, k)
                append(item)
    return out


def span_to_item(span: Any, model_windows: Mapping[str, int] | None = None) -> Item | None:
    """The engine input of one span, or None when it is not a turn or a compaction."""
    values = {
        key: kv.value.SerializeToString() for kv in span.attributes if (key := kv.key) in _SPAN_KEYS
    }
    item = _item(span, values, model_windows)
    if item is not None:
        item.target = span
    return item


# The readers below take the attributes as a mapping from key to the bytes of
# the OTLP ``AnyValue`` (a span view's map, or a dict) and decode only what they
# use (``otlp.values``).


def _item(
    span: Any, attrs: Mapping[str, bytes], model_windows: Mapping[str, int] | None
) -> Item | None:
    name = span.name
    if name == sc.SPAN_FINDING or name == sc.SPAN_REDISCOVERY:
        return None  # our own output (the agent's, or ours back through a Collector loop)
    if name == sc.SPAN_COMPACTION or sc.COMPACTION_SOURCE in attrs:
        item = _compaction_item(span, decoded(attrs, _COMPACTION_KEYS))
        item.bare = sc.COMPACTION_ID in attrs and not any(key in attrs for key in FLAG_KEYS)
        return item
    if sc.CONVERSATION_ID not in attrs and sc.CONTEXT_TOKENS not in attrs:
        return _call_item(span, attrs, model_windows)  # another instrumentation's span
    return _turn_item(span, attrs, model_windows)


def _service(resource_spans: Any) -> str | None:
    resource = getattr(resource_spans, "resource", None)
    if resource is None:
        return None
    attributes = resource.attributes
    raw = attributes.get(sc.SERVICE_NAME) if hasattr(attributes, "get") else None
    return str_of(raw) if isinstance(raw, bytes) else None


def _litellm_own(name: str, operation: str | None, attrs: Mapping[str, bytes]) -> bool:
    """Whether a span LiteLLM wrote on is one it opened for a call (``litellm_request``, or
    ``{operation} {model}`` in the latest GenAI conventions), not the caller's own."""
    if name.startswith("litellm"):
        return True
    model = word_of(attrs.get(sc.GEN_AI_REQUEST_MODEL))
    return operation is not None and name == f"{operation} {model}"


def _call_item(
    span: Any, attrs: Mapping[str, bytes], model_windows: Mapping[str, int] | None
) -> Item | None:
    """Another instrumentation's inference span: a turn carrying its ``CallFacts``
    (``otlp.inferred`` decides whether it is a turn, a summarizer's call or both)."""
    operation = word_of(attrs.get(sc.GEN_AI_OPERATION_NAME))
    if operation is not None and operation not in _INFERENCE_OPERATIONS:
        return None
    kind = word_of(attrs.get(_OI_KIND))
    if kind is not None and kind.upper() != "LLM":
        return None  # an OpenInference chain or agent span: its counts are its calls' sums
    if sc.LITELLM_CALL_ID in attrs and not _litellm_own(span.name, operation, attrs):
        # LiteLLM wrote its last call's usage over the caller's own span: not a call.
        count_unread(span.name, attrs)
        return None
    tokens = raw_request_tokens(attrs) if span.name == _RAW else input_tokens(attrs)
    if tokens is None:
        count_unread(span.name, attrs)
        return None
    parent = getattr(span, "parent_span_id", b"")
    content = captured(attrs)  # each message attribute parsed once for all its readers
    key, facts = read_call(span.name, attrs, tokens, span.trace_id, parent, content)
    item = _base(span, ItemKind.TURN, key, None, word_of(attrs.get(sc.GEN_AI_PROVIDER_NAME)))
    window = window_of(attrs.get(sc.CONTEXT_WINDOW))
    if model_windows and facts.model in model_windows:
        window = None
    names, arguments = tool_calls(content)  # captured content only: rediscovery, the phase
    item.turn = TurnObservation(
        context_tokens=tokens,
        model=facts.model,
        window=window if window and window > 0 else None,
        timestamp=item.time_ns / 1e9 or None,
        cache_read_tokens=int_of(attrs.get(sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS)),
        tool_calls=names,
        tool_arguments=arguments,
        tool_output_tokens=tuple(map(tokens_for_chars, tool_result_chars(content))),
    )
    item.call = facts
    return item


def _base(
    span: Any, kind: ItemKind, key: str | None, turn_index: int | None, provider: str | None
) -> Item:
    trace_id, span_id = span.trace_id, span.span_id
    return Item(
        conversation_id=key or trace_id.hex(),
        kind=kind,
        turn_index=turn_index,
        time_ns=span.start_time_unix_nano,
        trace_id=trace_id,
        span_id=span_id,
        # The whole trace id and span id (not hash(), salted per process; not a fold of
        # them, under which two spans differing in other bytes collide): the same key in
        # every process, equal only for the same span.
        dedupe_key=int.from_bytes(trace_id + span_id, "big"),
        provider=provider,
    )


def _turn_item(
    span: Any, attrs: Mapping[str, bytes], model_windows: Mapping[str, int] | None
) -> Item | None:
    get = attrs.get
    tokens = int_of(get(sc.CONTEXT_TOKENS))
    if tokens is None:
        operation = word_of(get(sc.GEN_AI_OPERATION_NAME))
        if operation is not None and operation not in _INFERENCE_OPERATIONS:
            return None
        tokens = int_of(get(sc.GEN_AI_USAGE_INPUT_TOKENS))
        if tokens is None:
            return None
    model = word_of(get(sc.GEN_AI_REQUEST_MODEL)) or word_of(get(sc.GEN_AI_RESPONSE_MODEL))
    window = window_of(get(sc.CONTEXT_WINDOW))
    if model_windows and model in model_windows:
        window = None  # the processor's own window table wins over the agent's
    ours = str_of(get(sc.CONVERSATION_ID))
    turn_index = int_of(get(sc.TURN_INDEX))
    if ours is not None and turn_index is None:
        # Our instrumentation numbers every call it counts as a turn; a call of its
        # conversation without a number is one it chose not to count (the summarizer
        # inside a compaction() block), so it is not a turn here either.
        return None
    key = ours or str_of(get(sc.GEN_AI_CONVERSATION_ID))
    item = _base(span, ItemKind.TURN, key, turn_index, word_of(get(sc.GEN_AI_PROVIDER_NAME)))
    item.turn = TurnObservation(
        context_tokens=max(tokens, 0),
        model=model,
        new_content_tokens=max(int_of(get(sc.CONTEXT_NEW_CONTENT_TOKENS)) or 0, 0),
        tool_output_tokens=ints_of(get(sc.TOOL_OUTPUT_TOKENS)),
        tool_calls=strs_of(get(sc.TOOL_CALLS)),
        tool_categories=strs_of(get(sc.TOOL_CATEGORIES)),
        tool_keys=strs_of(get(sc.TOOL_CALL_KEYS)),
        window=window if window and window > 0 else None,
        timestamp=item.time_ns / 1e9 or None,
        fixed_tokens=int_of(get(sc.CONTEXT_FIXED_TOKENS)),
        cache_read_tokens=int_of(get(sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS)),
    )
    if word_of(get(sc.PHASE_SOURCE)) == _REPORTED:
        item.phase = phase_report(decoded(attrs, _PHASE_KEYS))
    return item


def _compaction_item(span: Any, attrs: Mapping[str, AttrValue]) -> Item:
    key = as_str(attrs.get(sc.CONVERSATION_ID)) or as_str(attrs.get(sc.GEN_AI_CONVERSATION_ID))
    turn_index = as_count(attrs.get(sc.TURN_INDEX))
    provider = as_str(attrs.get(sc.GEN_AI_PROVIDER_NAME))
    item = _base(span, ItemKind.COMPACTION, key, turn_index, provider)
    generation = as_count(attrs.get(sc.LINEAGE_GENERATION))
    if attrs.get(sc.LINEAGE_ASSUMED) is True:
        generation = None  # the agent only assumed it: assume it here the same way
    item.compaction = CompactionObservation(
        source=as_enum(CompactionSource, attrs.get(sc.COMPACTION_SOURCE), CompactionSource.IMPORT),
        mode=as_enum(CompactionMode, attrs.get(sc.COMPACTION_MODE), CompactionMode.LOSSY),
        trigger=as_word(attrs.get(sc.COMPACTION_TRIGGER)),
        tokens_before=as_count(attrs.get(sc.TOKENS_BEFORE)),
        tokens_after=as_count(attrs.get(sc.TOKENS_AFTER_REPORTED)),
        summary_tokens=as_count(attrs.get(sc.TOKENS_SUMMARY)),
        retained_tail_tokens=as_count(attrs.get(sc.TOKENS_RETAINED_TAIL)),
        summary_text=as_str(attrs.get(sc.SUMMARY_TEXT)),
        parent_id=None if generation is None else as_str(attrs.get(sc.LINEAGE_PARENT_ID)),
        # The agent's lineage verdict is a fact about its texts, which we do not see.
        continues_lineage=None if generation is None else generation > 0,
        failed=attrs.get(sc.SUMMARY_FAILED) is True,
        compaction_id=as_str(attrs.get(sc.COMPACTION_ID)) or span.span_id.hex() or None,
        timestamp=span.start_time_unix_nano / 1e9 or None,
        # The agent's size after is the first call's context (measured): the same here.
        context_after=as_count(attrs.get(sc.TOKENS_AFTER)),
        error=as_str(attrs.get(sc.SUMMARY_ERROR)),
        fixed_tokens=as_count(attrs.get(sc.CONTEXT_FIXED_TOKENS)),
        compacted_tokens=as_count(attrs.get(sc.TOKENS_COMPACTED)),
    )
    item.phase = phase_report(attrs)
    return item


def phase_report(attrs: Mapping[str, AttrValue]) -> PhaseReport | None:
    """The agent's own phase report carried on a span, if its phase was reported."""
    name = as_str(attrs.get(sc.PHASE_NAME))
    if name is None or attrs.get(sc.PHASE_SOURCE) != _REPORTED:
        return None
    names = as_strs(attrs.get(sc.PHASE_NAMES))
    values = attrs.get(sc.PHASE_DISTRIBUTION)
    distribution = None
    if isinstance(values, list) and names and len(values) == len(names):
        distribution = {n: float(v) for n, v in zip(names, values, strict=True) if is_number(v)}
    confidence = attrs.get(sc.PHASE_CONFIDENCE)
    return PhaseReport(
        name=name,
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        distribution=distribution or None,
    )
