"""Agents' own OpenTelemetry log events in, engine inputs out: Claude Code and Codex CLI.

Neither agent is instrumented by us; both export log events over OTLP, and these
are the ones that say something about the context (docs/processor.md, "Claude Code
and Codex telemetry"):

* ``claude_code.api_request``, by its ``query_source``: the agent's own call
  (``sdk``, ``repl_main_thread...``, or none, as older builds send) is a turn,
  context = ``input_tokens + cache_read_tokens + cache_creation_tokens``; the
  summarizer's call (``compact``) is the cost of the compaction Claude Code
  reports next (a ``SUMMARIZER`` item), never a turn; any other source (a
  sub-agent, a side query: their own contexts) is not an engine input;
* ``claude_code.compaction``: a lossy compaction; ``success="false"`` is a failed
  summary step, with its ``error``; ``pre_tokens`` is the size before,
  ``post_tokens`` Claude Code's own figure (the summary's size), kept as the
  reported size after and as the summary's size: the size after is the next agent
  request's context, measured by the engine as for transcripts;
* ``codex.sse_event`` with ``event.kind = response.completed``: a turn, context =
  ``input_token_count`` (cached tokens included); one with no output at all is the
  warm-up request Codex sends at start-up, not a turn. Codex reports no compaction.
* the tool events (``tool_decision``, ``tool_result``, Claude Code's and Codex's), given an
  :class:`~otel_compaction.otlp.agent_tools.AgentTools`: held, and handed to the next
  turn as the calls of the response before it, for rediscovery (that module says how).

The event name is whichever of ``LogRecord.event_name``, the ``event.name``
attribute and a string body names one of these events (Claude Code sends the full
name in the body and the short one in ``event.name``; Codex the full one in
``event.name`` and its tracing call site in ``event_name``). The conversation key is
``compaction.conversation.id``, else ``gen_ai.conversation.id``, else the agent's
``session.id`` / ``conversation.id``, else the trace id. A record without a time
(``timeUnixNano`` 0, as Codex sends them) is placed at its observed time. A Claude
Code compaction's id is derived from its conversation and time, or, with no time at
all, from its ``event.sequence``, else its whole content (:func:`derived_compaction_id`):
only a re-sent record is dropped as a duplicate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

from otel_compaction import semconv as sc
from otel_compaction._count import as_count
from otel_compaction.model import CompactionObservation, SummarizerCost, TurnObservation
from otel_compaction.otlp import agent_tools
from otel_compaction.otlp.agent_tools import AgentTools
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import Item, ItemKind, pick
from otel_compaction.otlp.values import AttrValue, as_str, as_word
from otel_compaction.semconv import CompactionMode, CompactionSource

_KEYS = frozenset(
    {
        sc.CONVERSATION_ID,
        sc.GEN_AI_CONVERSATION_ID,
        sc.SESSION_ID,
        sc.CODEX_CONVERSATION_ID,
        sc.EVENT_NAME,
        sc.CLAUDE_CODE_MODEL,
        sc.CLAUDE_CODE_INPUT_TOKENS,
        sc.CLAUDE_CODE_OUTPUT_TOKENS,
        sc.CLAUDE_CODE_CACHE_READ_TOKENS,
        sc.CLAUDE_CODE_CACHE_CREATION_TOKENS,
        sc.CLAUDE_CODE_DURATION_MS,
        sc.CLAUDE_CODE_COST_USD,
        sc.CLAUDE_CODE_QUERY_SOURCE,
        sc.CLAUDE_CODE_TRIGGER,
        sc.CLAUDE_CODE_SUCCESS,
        sc.CLAUDE_CODE_ERROR,
        sc.CLAUDE_CODE_PRE_TOKENS,
        sc.CLAUDE_CODE_POST_TOKENS,
        sc.CODEX_EVENT_KIND,
        sc.CODEX_INPUT_TOKENS,
        sc.CODEX_OUTPUT_TOKENS,
        sc.CODEX_CACHED_TOKENS,
        *agent_tools.KEYS,
    }
)
_CC_COMPACTION = {sc.CLAUDE_CODE_EVENT_COMPACTION, sc.CLAUDE_CODE_EVENT_COMPACTION.split(".")[1]}
_CC_API_REQUEST = {sc.CLAUDE_CODE_EVENT_API_REQUEST, sc.CLAUDE_CODE_EVENT_API_REQUEST.split(".")[1]}
_NAMES = frozenset({*_CC_COMPACTION, *_CC_API_REQUEST, sc.CODEX_EVENT_SSE, *agent_tools.NAMES})


def logs_to_items(request: Any, tools: AgentTools | None = None) -> Iterator[Item]:
    """Every engine input in an ``ExportLogsServiceRequest``, in request order; with
    ``tools``, the turns carry the tool calls of the responses before them."""
    for rl in request.resource_logs:
        resource = None
        for sl in rl.scope_logs:
            for record in sl.log_records:
                name = _event_name(record)
                if name is None:
                    continue
                if resource is None:
                    resource = pick(rl.resource.attributes, _KEYS)
                item = log_to_item(record, name, resource, tools)
                if item is not None:
                    yield item


def _event_name(record: Any) -> str | None:
    # Each place may hold something else: Codex puts its tracing call site in
    # ``event_name`` ("event otel/src/events/...:1012") and the name in ``event.name``.
    name = record.event_name
    if name in _NAMES:
        return str(name)
    for kv in record.attributes:
        if kv.key == sc.EVENT_NAME:
            name = kv.value.string_value
            if name in _NAMES:
                return str(name)
            break
    if record.body.WhichOneof("value") == "string_value" and record.body.string_value in _NAMES:
        return str(record.body.string_value)
    return None


def log_to_item(
    record: Any, name: str, resource: Mapping[str, AttrValue], tools: AgentTools | None = None
) -> Item | None:
    """The engine input of one agent log event, or None when it is none (a tool event is
    held by ``tools``, and read by none without)."""
    attrs = {**resource, **pick(record.attributes, _KEYS)}
    key = (
        as_str(attrs.get(sc.CONVERSATION_ID))
        or as_str(attrs.get(sc.GEN_AI_CONVERSATION_ID))
        or as_str(attrs.get(sc.SESSION_ID))
        or as_str(attrs.get(sc.CODEX_CONVERSATION_ID))
        or (record.trace_id.hex() if record.trace_id else None)
    )
    if key is None:
        return None
    if name in agent_tools.NAMES:
        if tools is not None:
            tools.observe(key, name, attrs)
        return None
    time_ns = record.time_unix_nano or record.observed_time_unix_nano
    if name == sc.CODEX_EVENT_SSE:
        turn = _codex_turn(attrs, time_ns)
        if turn is None:
            return None
        return _item(record, key, name, time_ns, ItemKind.TURN, _with_calls(turn, key, tools, True))
    if name in _CC_COMPACTION:
        item = _item(record, key, name, time_ns, ItemKind.COMPACTION)
        compaction_id = derived_compaction_id(key, time_ns, _sequence(record), record)
        item.compaction = _cc_compaction(attrs, compaction_id, time_ns)
        return item
    source = as_str(attrs.get(sc.CLAUDE_CODE_QUERY_SOURCE))
    if is_summarizer(source):
        item = _item(record, key, name, time_ns, ItemKind.SUMMARIZER)
        item.summarizer = _cc_summarizer(attrs)
        return item
    if not is_agent_call(source):
        return None  # a sub-agent's or a side query's call: another context
    turn = TurnObservation.of_anthropic_usage(
        as_count(attrs.get(sc.CLAUDE_CODE_INPUT_TOKENS)),
        as_count(attrs.get(sc.CLAUDE_CODE_CACHE_READ_TOKENS)),
        as_count(attrs.get(sc.CLAUDE_CODE_CACHE_CREATION_TOKENS)),
        model=as_word(attrs.get(sc.CLAUDE_CODE_MODEL)),
        timestamp=time_ns / 1e9 or None,
    )
    return _item(record, key, name, time_ns, ItemKind.TURN, _with_calls(turn, key, tools, False))


def _with_calls(
    turn: TurnObservation, key: str, tools: AgentTools | None, codex: bool
) -> TurnObservation:
    """The turn with the tool calls of the response before it, when ``tools`` holds any."""
    if tools is None:
        return turn
    names, keys, tokens = tools.turn(key, codex=codex)
    if not names:
        return turn
    return dataclasses.replace(turn, tool_calls=names, tool_keys=keys, tool_output_tokens=tokens)


def is_agent_call(query_source: str | None) -> bool:
    """Whether a Claude Code request of this ``query_source`` is the agent's own call (a
    turn): none given (older builds), ``sdk`` (``claude -p``, the Agent SDK) or the
    interactive main loop (``repl_main_thread``, with or without a ``:...`` detail)."""
    if query_source is None:
        return True
    return query_source.split(":", 1)[0] in sc.CLAUDE_CODE_AGENT_SOURCES


def is_summarizer(query_source: str | None) -> bool:
    """Whether a Claude Code request of this ``query_source`` is a compaction's summarizer."""
    if query_source is None:
        return False
    return query_source.split(":", 1)[0] == sc.CLAUDE_CODE_COMPACT_SOURCE


def _item(
    record: Any,
    key: str,
    name: str,
    time_ns: int,
    kind: ItemKind,
    turn: TurnObservation | None = None,
) -> Item:
    provider = sc.PROVIDER_OPENAI if name == sc.CODEX_EVENT_SSE else sc.PROVIDER_ANTHROPIC
    return Item(
        conversation_id=key,
        kind=kind,
        turn_index=None,
        time_ns=time_ns,
        trace_id=record.trace_id,
        span_id=record.span_id,
        dedupe_key=record_key(key, name, time_ns, record),
        turn=turn,
        provider=provider,
        target=record,
        signal=Signal.LOGS,
    )


def record_key(key: str, name: str, time_ns: int, record: Any) -> int:
    """A de-duplication key for a log record: the same record, the same key, in every
    process (a digest, never ``hash()`` of a str, which ``PYTHONHASHSEED`` changes)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{key}\x00{name}\x00{time_ns}\x00".encode())
    digest.update(record.SerializeToString(deterministic=True))
    return int.from_bytes(digest.digest(), "big")


def derived_compaction_id(
    conversation_id: str, time_ns: int, sequence: int | None = None, record: Any = None
) -> str:
    """A stable id for a compaction its source gave none: the same event, the same id, and
    two events told apart by what tells them apart.

    An event with a time is named by its conversation and time (two compactions of one
    session never share a nanosecond). One without a time is named by its
    ``event.sequence`` (Claude Code numbers every event of a session), else by its whole
    content: only a true re-send of the same record gets the same id and is dropped.
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{conversation_id}\x00{time_ns}".encode())
    if not time_ns:
        if sequence is not None:
            digest.update(f"\x00seq\x00{sequence}".encode())
        elif record is not None:
            digest.update(b"\x00record\x00" + record.SerializeToString(deterministic=True))
    return digest.hexdigest()


def _sequence(record: Any) -> int | None:
    """The record's ``event.sequence``, when it has a whole number there."""
    for kv in record.attributes:
        if kv.key == sc.CLAUDE_CODE_EVENT_SEQUENCE:
            value = kv.value
            kind = value.WhichOneof("value")
            if kind == "int_value":
                return int(value.int_value)
            if kind == "string_value" and value.string_value.isdigit():
                return int(value.string_value)
            return None
    return None


def _cc_compaction(
    attrs: Mapping[str, AttrValue], compaction_id: str, time_ns: int
) -> CompactionObservation:
    success = attrs.get(sc.CLAUDE_CODE_SUCCESS)
    failed = success is False or (isinstance(success, str) and success.lower() == "false")
    post = as_count(attrs.get(sc.CLAUDE_CODE_POST_TOKENS))
    return CompactionObservation(
        source=CompactionSource.IMPORT,
        mode=CompactionMode.LOSSY,
        trigger=as_word(attrs.get(sc.CLAUDE_CODE_TRIGGER)),
        tokens_before=as_count(attrs.get(sc.CLAUDE_CODE_PRE_TOKENS)),
        tokens_after=post,
        # Claude Code's post_tokens is the size of what replaced the history: its summary.
        summary_tokens=None if failed else post,
        failed=failed,
        error=as_word(attrs.get(sc.CLAUDE_CODE_ERROR)) if failed else None,
        compaction_id=compaction_id,
        timestamp=time_ns / 1e9 or None,
    )


def _cc_summarizer(attrs: Mapping[str, AttrValue]) -> SummarizerCost:
    context = TurnObservation.of_anthropic_usage(
        as_count(attrs.get(sc.CLAUDE_CODE_INPUT_TOKENS)),
        as_count(attrs.get(sc.CLAUDE_CODE_CACHE_READ_TOKENS)),
        as_count(attrs.get(sc.CLAUDE_CODE_CACHE_CREATION_TOKENS)),
    ).context_tokens
    duration = _number(attrs.get(sc.CLAUDE_CODE_DURATION_MS))
    return SummarizerCost(
        calls=1,
        input_tokens=context,
        output_tokens=max(as_count(attrs.get(sc.CLAUDE_CODE_OUTPUT_TOKENS)) or 0, 0),
        duration_s=None if duration is None else duration / 1000,
        cost_usd=_number(attrs.get(sc.CLAUDE_CODE_COST_USD)),
    )


def _codex_turn(attrs: Mapping[str, AttrValue], time_ns: int) -> TurnObservation | None:
    if as_str(attrs.get(sc.CODEX_EVENT_KIND)) != sc.CODEX_RESPONSE_COMPLETED:
        return None
    tokens = as_count(attrs.get(sc.CODEX_INPUT_TOKENS))
    if tokens is None or tokens <= 0:
        return None
    if as_count(attrs.get(sc.CODEX_OUTPUT_TOKENS)) == 0:
        return None  # the start-up warm-up: the prompt sent once, nothing generated
    cached = as_count(attrs.get(sc.CODEX_CACHED_TOKENS))
    return TurnObservation(
        context_tokens=tokens,
        model=as_word(attrs.get(sc.CODEX_MODEL)),
        timestamp=time_ns / 1e9 or None,
        cache_read_tokens=cached if cached is not None and cached >= 0 else None,
    )


def _number(value: AttrValue) -> float | None:
    """A finite, non-negative number from an int, a double or a numeric string."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None
