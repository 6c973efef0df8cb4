"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Lines are ``{"timestamp", "type", "payload"}``. What they become:

- ``session_meta``: the conversation id (``payload.id``) and provider;
  ``turn_context``: the model of the calls that follow;
- ``event_msg`` / ``token_count`` with ``info``: one LLM call (a turn). Context
  tokens are ``info.last_token_usage.input_tokens`` (Codex counts the cached
  input inside ``input_tokens``: ``cached_input_tokens`` is a part of it), the
  window is ``info.model_context_window``. A repeated ``token_count`` with the
  same running total is the same call and is skipped;
- ``response_item``: ``function_call``, ``custom_tool_call`` and
  ``local_shell_call`` are the tool calls of the next ``token_count``'s call;
  user messages and tool outputs (``*_output``) are its new content;
- ``compacted`` (``payload.message`` is the summary; an empty message with a
  ``replacement_history`` holding an opaque ``compaction`` item is a
  server-side compaction) and ``event_msg`` / ``context_compacted``: one
  compaction, counted once when both appear between two calls. Codex does not
  record the context size after a compaction; before it is the last call's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_compaction._count import as_count
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import PROVIDER_OPENAI, CompactionMode, CompactionSource
from otel_compaction.signals.tokens import estimate_tokens
from otel_compaction.transcripts.events import (
    CallInfo,
    CompactionEvent,
    ConversationInfo,
    Event,
    TurnEvent,
)
from otel_compaction.transcripts.lines import RECORD_ERRORS, Diagnostics, read_json_lines
from otel_compaction.transcripts.progress import Progress
from otel_compaction.transcripts.text import (
    arguments_text,
    content_text,
    parse_timestamp,
)

AGENT = "codex"
_TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_SERVER_ITEMS = frozenset({"compaction", "compaction_summary"})


@dataclass(slots=True)
class _Compaction:
    summary: str | None = None
    server: bool = False
    timestamp: float | None = None
    end: float | None = None
    trigger: str | None = None


@dataclass(slots=True)
class _State:
    cid: str
    source: str
    announced: bool = False
    session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    new_content: int = 0
    tool_outputs: list[int] = field(default_factory=list)
    tools: list[tuple[str, str | None]] = field(default_factory=list)
    call_start: float | None = None
    last_total: Any = None
    last_context: int | None = None
    compaction: _Compaction | None = None
    compactions: int = 0


def read_codex(
    path: Path, diagnostics: Diagnostics, progress: Progress | None = None
) -> Iterator[Event]:
    """The events of one Codex rollout, in order."""
    state = _State(cid=path.stem, source=str(path))
    for lineno, record in read_json_lines(path, diagnostics, progress):
        try:
            yield from _record(state, record)
        except RECORD_ERRORS as exc:
            diagnostics.skip(path, lineno, f"unexpected Codex record: {exc!r}")
    yield from _announce(state)
    yield from _flush_compaction(state)


def _record(state: _State, record: dict[str, Any]) -> Iterator[Event]:
    kind = record.get("type")
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return
    when = parse_timestamp(record.get("timestamp"))
    if kind == "session_meta":
        _session_meta(state, payload)
    elif kind == "turn_context":
        model = payload.get("model")
        state.model = model if isinstance(model, str) and model else state.model
    elif kind == "response_item":
        _response_item(state, payload, when)
    elif kind == "compacted":
        pending = _pending(state, when)
        message = payload.get("message")
        if isinstance(message, str) and message.strip():
            pending.summary = message
        elif _has_server_item(payload.get("replacement_history")):
            pending.server = True
        pending.end = when
    elif kind == "event_msg":
        yield from _event(state, payload, when)


def _session_meta(state: _State, payload: dict[str, Any]) -> None:
    nested = payload.get("meta")
    meta: dict[str, Any] = nested if isinstance(nested, dict) else payload
    session = meta.get("id")
    if not state.announced and isinstance(session, str) and session:
        state.cid = state.session_id = session
    provider = meta.get("model_provider")
    if isinstance(provider, str) and provider:
        state.provider = provider


def _response_item(state: _State, payload: dict[str, Any], when: float | None) -> None:
    item = payload.get("type")
    if state.call_start is None:
        state.call_start = when
    if item in _TOOL_CALLS:
        name = str(payload.get("name") or "unknown")
        state.tools.append((name, arguments_text(payload.get(_TOOL_CALLS[str(item)]))))
    elif item == "local_shell_call":
        state.tools.append(("local_shell", arguments_text(payload.get("action"))))
    elif item == "web_search_call":
        state.tools.append(("web_search", None))
    elif isinstance(item, str) and item.endswith("_output"):
        size = estimate_tokens(_output_text(payload.get("output")))
        state.tool_outputs.append(size)
        state.new_content += size
    elif item == "message" and payload.get("role") == "user":
        state.new_content += estimate_tokens(content_text(payload.get("content")))


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        return content_text(output.get("content"))
    return content_text(output)


def _event(state: _State, payload: dict[str, Any], when: float | None) -> Iterator[Event]:
    kind = payload.get("type")
    if kind == "context_compacted":
        _pending(state, when).end = when
        return
    if kind != "token_count":
        return
    info = payload.get("info")
    if not isinstance(info, dict):
        return  # rate-limit-only updates carry no usage
    last = info.get("last_token_usage")
    total = info.get("total_token_usage")
    if not isinstance(last, dict) or (total is not None and total == state.last_total):
        return
    state.last_total = total
    yield from _announce(state)
    yield from _flush_compaction(state)
    yield _turn(state, last, as_count(info.get("model_context_window")), when)


def _turn(state: _State, last: dict[str, Any], window: int | None, when: float | None) -> Event:
    context = as_count(last.get("input_tokens")) or 0
    cached = as_count(last.get("cached_input_tokens"))
    observation = TurnObservation(
        context_tokens=context,
        model=state.model,
        new_content_tokens=state.new_content,
        tool_output_tokens=tuple(state.tool_outputs),
        tool_calls=tuple(name for name, _ in state.tools),
        tool_arguments=tuple(args for _, args in state.tools),
        window=window or None,
        timestamp=state.call_start or when,
    )
    output = as_count(last.get("output_tokens"))
    info = CallInfo(
        provider=state.provider or PROVIDER_OPENAI,
        input_tokens=context,
        output_tokens=output,
        cache_read_tokens=cached,
        start_time=state.call_start or when,
        end_time=when,
    )
    state.new_content, state.tool_outputs, state.tools = 0, [], []
    state.call_start = None
    state.last_context = context
    return TurnEvent(state.cid, observation, info)


def _announce(state: _State) -> Iterator[Event]:
    if not state.announced:
        state.announced = True
        yield ConversationInfo(state.cid, AGENT, state.session_id, state.source)


def _pending(state: _State, when: float | None) -> _Compaction:
    if state.compaction is None:
        state.compaction = _Compaction(timestamp=when)
    return state.compaction


def _has_server_item(history: Any) -> bool:
    if not isinstance(history, list):
        return False
    return any(isinstance(item, dict) and item.get("type") in _SERVER_ITEMS for item in history)


def _flush_compaction(state: _State) -> Iterator[Event]:
    pending, state.compaction = state.compaction, None
    if pending is None:
        return
    yield from _announce(state)
    state.compactions += 1
    summary = pending.summary
    observation = CompactionObservation(
        source=CompactionSource.IMPORT,
        mode=CompactionMode.SERVER if pending.server else CompactionMode.LOSSY,
        trigger=pending.trigger,
        tokens_before=state.last_context,
        summary_text=summary,
        compaction_id=f"{state.cid}#compaction-{state.compactions}",
        timestamp=pending.timestamp,
    )
    yield CompactionEvent(state.cid, observation, pending.end)
