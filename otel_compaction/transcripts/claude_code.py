"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Records and what they become:

- ``assistant`` with ``message.usage``: one LLM call (a turn). One API call may
  be split over several records sharing ``message.id``; they are merged (the
  tool calls of all of them, the last usage). Context tokens are
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``.
  Synthetic messages (model ``<synthetic>``, API error notices) are not calls.
- ``user``: ``tool_result`` blocks and text are the new content of the next
  call (tool results also count as tool outputs for ``attention_decay``).
- ``system`` / ``compact_boundary`` with ``compactMetadata``: a lossy
  compaction (trigger, ``preTokens``, ``postTokens`` when present); the
  ``user`` record with ``isCompactSummary`` that follows holds its summary (the
  engine's lineage rules decide from it whether it carries the previous one).
  ``postTokens`` is Claude Code's own figure, the size of the summary, not of the
  next request: it is kept as the reported size after, and the engine measures
  the size after on the next call.
- ``system`` / ``microcompact_boundary``: a prune of old tool outputs
  (``microcompactMetadata``: ``preTokens``, ``tokensSaved``).
- ``summary``: a session title, not a compaction; ignored like the other kinds.

Sub-agent records (``isSidechain: true``) are a separate conversation,
``<sessionId>/agent-<agentId>`` (``<sessionId>/sidechain`` when the record has
no ``agentId``): a sub-agent has its own context and its own compactions.

A record is read once: one repeated later in the file or in another file of the
same run (the same ``uuid``, or the same content when it has none) is ignored, and
the :class:`~otel_compaction.transcripts.ledger.RecordLedger` counts which file
repeats which: a resumed or forked session and a compaction sub-agent start with a
copy of their parent's records, whose compactions are counted once. A
``compact_boundary`` whose ``logicalParentUuid``, ``preTokens``, trigger and time are
those of one read before is a repeat too, whatever its ``uuid``. A call whose usage figures are
no token counts is a skipped line; a ``compact_boundary`` without its
``uuid``, ``timestamp`` or ``compactMetadata`` fields is read with what it has,
and a note on stderr names what was missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_compaction._count import as_count
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import PROVIDER_ANTHROPIC, CompactionMode, CompactionSource
from otel_compaction.signals.tokens import estimate_tokens
from otel_compaction.transcripts.events import (
    CallInfo,
    CompactionEvent,
    ConversationInfo,
    Event,
    TurnEvent,
)
from otel_compaction.transcripts.ledger import RecordLedger
from otel_compaction.transcripts.lines import RECORD_ERRORS, Diagnostics, read_json_lines
from otel_compaction.transcripts.progress import Progress
from otel_compaction.transcripts.read_once import ReadOnce
from otel_compaction.transcripts.text import (
    arguments_text,
    content_text,
    parse_timestamp,
)

AGENT = "claude-code"
SYNTHETIC_MODEL = "<synthetic>"
_USAGE_KEYS = (
    "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens",
)  # fmt: skip
_BOUNDARY_FIELDS = ("uuid", "timestamp", "compactMetadata")
_BOUNDARY_META_FIELDS = ("trigger", "preTokens")
_RECENT_CALLS = 256
"""Message ids remembered per conversation, to merge the records of one API call."""


@dataclass(slots=True)
class _Call:
    """An API call being assembled from its records."""

    key: str
    new_content: int
    tool_outputs: tuple[int, ...]
    line: int = 0
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    tools: list[tuple[str, str | None]] = field(default_factory=list)
    tool_ids: set[str] = field(default_factory=set)
    start: float | None = None
    end: float | None = None


@dataclass(slots=True)
class _Compaction:
    """A compaction boundary waiting for its summary record."""

    compaction_id: str
    mode: CompactionMode
    trigger: str | None
    tokens_before: int | None
    tokens_after: int | None
    timestamp: float | None
    summary: str | None = None
    end: float | None = None


@dataclass(slots=True)
class _Conversation:
    cid: str
    call: _Call | None = None
    compaction: _Compaction | None = None
    new_content: int = 0
    tool_outputs: list[int] = field(default_factory=list)
    compactions: int = 0
    emitted: dict[str, None] = field(default_factory=dict)
    """The last calls flushed (bounded: the records of one call lie close together)."""


def read_claude_code(
    path: Path,
    diagnostics: Diagnostics,
    progress: Progress | None = None,
    ledger: RecordLedger | None = None,
) -> Iterator[Event]:
    """The events of one Claude Code transcript, in order; records the ``ledger`` (shared
    by the files of one run) has seen already are not read again."""
    reader = _Reader(path, diagnostics, ledger or RecordLedger())
    lineno = 0
    for lineno, record in read_json_lines(path, diagnostics, progress):
        try:
            yield from reader.record(record, lineno)
        except RECORD_ERRORS as exc:
            diagnostics.skip(path, lineno, f"unexpected Claude Code record: {exc!r}")
    try:
        yield from reader.finish()
    except RECORD_ERRORS as exc:
        diagnostics.skip(path, lineno, f"unexpected Claude Code record: {exc!r}")


class _Reader:
    """The state of one file: its conversations (the session and its sub-agents)."""

    def __init__(self, path: Path, diagnostics: Diagnostics, ledger: RecordLedger) -> None:
        self._path = path
        self._diagnostics = diagnostics
        self._session: str | None = None
        self._conversations: dict[str, _Conversation] = {}
        self._once = ReadOnce(ledger, str(path), self._conversation_key)

    def record(self, record: dict[str, Any], line: int) -> Iterator[Event]:
        """The events one record (at ``line``) completes."""
        kind = record.get("type")
        if kind not in ("assistant", "user", "system"):
            return
        if not self._once.first_reading(record):
            return  # a record repeated from earlier in this file or in another one
        conv, info = self._conversation(record)
        if info is not None:
            yield info
        if kind == "assistant":
            yield from self._assistant(conv, record, line)
        elif kind == "user":
            yield from self._user(conv, record)
        else:
            yield from self._system(conv, record, line)

    def finish(self) -> Iterator[Event]:
        """Flush what the end of the file completes."""
        for conv in self._conversations.values():
            yield from self._flush_call(conv)
            yield from _flush_compaction(conv)

    def _flush_call(self, conv: _Conversation) -> Iterator[Event]:
        """The pending call as a turn; a call whose usage is unreadable is a skipped line."""
        call = conv.call
        bad = [k for k in _USAGE_KEYS if call is not None and _not_a_count(call.usage.get(k))]
        if call is not None and bad:
            conv.call = None
            _remember(conv, call.key)
            figures = ", ".join(f"{k}={call.usage[k]!r}" for k in bad)
            self._diagnostics.skip(self._path, call.line, f"usage is no token count: {figures}")
            return
        yield from _flush_call(conv)

    def _conversation_key(self, record: dict[str, Any]) -> str:
        """The conversation a record belongs to: the session, or one of its sub-agents."""
        session = record.get("sessionId")
        named_session = session if isinstance(session, str) and session else None
        base = self._session or named_session or self._path.stem
        if record.get("isSidechain") is not True:
            return base
        agent = record.get("agentId")
        return f"{base}/agent-{agent}" if isinstance(agent, str) and agent else f"{base}/sidechain"

    def _conversation(self, record: dict[str, Any]) -> tuple[_Conversation, Event | None]:
        session = record.get("sessionId")
        if self._session is None and isinstance(session, str) and session:
            self._session = session
        cid = self._conversation_key(record)
        session_id = None if record.get("isSidechain") is True else self._session
        conv = self._conversations.get(cid)
        if conv is not None:
            return conv, None
        conv = self._conversations[cid] = _Conversation(cid)
        return conv, ConversationInfo(cid, AGENT, session_id, str(self._path))

    def _assistant(self, conv: _Conversation, record: dict[str, Any], line: int) -> Iterator[Event]:
        message = record.get("message")
        if not isinstance(message, dict) or record.get("isApiErrorMessage") is True:
            return
        model = message.get("model")
        usage = message.get("usage")
        if model == SYNTHETIC_MODEL or not isinstance(usage, dict):
            return
        key = str(message.get("id") or record.get("requestId") or record.get("uuid") or "")
        if not key or key in conv.emitted:
            return  # a call flushed already, whose records come again
        if conv.call is None or conv.call.key != key:
            yield from self._flush_call(conv)
            yield from _flush_compaction(conv)
            conv.call = _Call(key, conv.new_content, tuple(conv.tool_outputs))
            conv.new_content, conv.tool_outputs = 0, []
        _merge(conv.call, model, usage, message.get("content"), record.get("timestamp"))
        if conv.call.usage is usage:
            conv.call.line = line

    def _user(self, conv: _Conversation, record: dict[str, Any]) -> Iterator[Event]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if record.get("isCompactSummary") is True:
            when = parse_timestamp(record.get("timestamp"))
            if conv.compaction is None:  # builds older than compact_boundary records
                yield from self._flush_call(conv)
                conv.compaction = _new_compaction(conv, record, None, when)
            conv.compaction.summary = content_text(content)
            conv.compaction.end = when
            return
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    size = estimate_tokens(content_text(block.get("content")))
                    conv.tool_outputs.append(size)
                    conv.new_content += size
                else:
                    conv.new_content += estimate_tokens(content_text(block))
        else:
            conv.new_content += estimate_tokens(content_text(content))

    def _system(self, conv: _Conversation, record: dict[str, Any], line: int) -> Iterator[Event]:
        subtype = record.get("subtype")
        if subtype not in ("compact_boundary", "microcompact_boundary"):
            return
        yield from self._flush_call(conv)
        yield from _flush_compaction(conv)
        when = parse_timestamp(record.get("timestamp"))
        if subtype == "compact_boundary":
            missing = _missing_boundary_fields(record)
            if missing:
                self._diagnostics.note(
                    self._path, line, f"compact_boundary record without {', '.join(missing)}: "
                    "read as a compaction with those unknown",
                )  # fmt: skip
            conv.compaction = _new_compaction(conv, record, record.get("compactMetadata"), when)
            return
        meta = record.get("microcompactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        before, saved = as_count(meta.get("preTokens")), as_count(meta.get("tokensSaved"))
        conv.compaction = _Compaction(
            compaction_id=_compaction_id(conv, record),
            mode=CompactionMode.PRUNE,
            trigger=_str(meta.get("trigger")),
            tokens_before=before,
            tokens_after=None if before is None or saved is None else max(0, before - saved),
            timestamp=when,
        )
        yield from _flush_compaction(conv)


def _remember(conv: _Conversation, key: str) -> None:
    conv.emitted[key] = None
    if len(conv.emitted) > _RECENT_CALLS:
        del conv.emitted[next(iter(conv.emitted))]


def _not_a_count(value: Any) -> bool:
    """A usage figure that is there but no token count (``"¹²"``, -5, a list...)."""
    return value is not None and as_count(value) is None


def _missing_boundary_fields(record: dict[str, Any]) -> list[str]:
    missing = [name for name in _BOUNDARY_FIELDS if record.get(name) in (None, "")]
    meta = record.get("compactMetadata")
    if isinstance(meta, dict):
        missing += [f"compactMetadata.{k}" for k in _BOUNDARY_META_FIELDS if meta.get(k) is None]
    elif "compactMetadata" not in missing:
        missing.append("compactMetadata")
    return missing


def _merge(call: _Call, model: Any, usage: dict[str, Any], content: Any, when: Any) -> None:
    """Add one record of an API call to the call being assembled."""
    if isinstance(model, str) and model:
        call.model = model
    previous_output = as_count(call.usage.get("output_tokens")) or 0
    if not call.usage or (as_count(usage.get("output_tokens")) or 0) >= previous_output:
        call.usage = usage
    moment = parse_timestamp(when)
    if moment is not None:
        call.start = moment if call.start is None else min(call.start, moment)
        call.end = moment if call.end is None else max(call.end, moment)
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        block_id = str(block.get("id") or len(call.tools))
        if block_id in call.tool_ids:
            continue
        call.tool_ids.add(block_id)
        call.tools.append((str(block.get("name") or "unknown"), arguments_text(block.get("input"))))


def _flush_call(conv: _Conversation) -> Iterator[Event]:
    call, conv.call = conv.call, None
    if call is None:
        return
    _remember(conv, call.key)
    usage = call.usage
    write = as_count(usage.get("cache_creation_input_tokens"))
    read = as_count(usage.get("cache_read_input_tokens"))
    # The same reading as Claude Code's api_request events (otlp.agent_events).
    observation = TurnObservation.of_anthropic_usage(
        as_count(usage.get("input_tokens")),
        read,
        write,
        model=call.model,
        new_content_tokens=call.new_content,
        tool_output_tokens=call.tool_outputs,
        tool_calls=tuple(name for name, _ in call.tools),
        tool_arguments=tuple(args for _, args in call.tools),
        timestamp=call.start,
    )
    info = CallInfo(
        provider=PROVIDER_ANTHROPIC,
        response_id=call.key,
        input_tokens=observation.context_tokens,
        output_tokens=as_count(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        start_time=call.start,
        end_time=call.end,
    )
    yield TurnEvent(conv.cid, observation, info)


def _new_compaction(
    conv: _Conversation, record: dict[str, Any], meta: Any, when: float | None
) -> _Compaction:
    meta = meta if isinstance(meta, dict) else {}
    return _Compaction(
        compaction_id=_compaction_id(conv, record),
        mode=CompactionMode.LOSSY,
        trigger=_str(meta.get("trigger")),
        tokens_before=as_count(meta.get("preTokens")),
        tokens_after=as_count(meta.get("postTokens")),
        timestamp=when,
    )


def _compaction_id(conv: _Conversation, record: dict[str, Any]) -> str:
    conv.compactions += 1
    uuid = record.get("uuid")
    return uuid if isinstance(uuid, str) and uuid else f"{conv.cid}#compaction-{conv.compactions}"


def _flush_compaction(conv: _Conversation) -> Iterator[Event]:
    pending, conv.compaction = conv.compaction, None
    if pending is None:
        return
    summary = pending.summary
    observation = CompactionObservation(
        source=CompactionSource.IMPORT,
        mode=pending.mode,
        trigger=pending.trigger,
        tokens_before=pending.tokens_before,
        tokens_after=pending.tokens_after,
        summary_text=summary,
        compaction_id=pending.compaction_id,
        timestamp=pending.timestamp,
    )
    yield CompactionEvent(conv.cid, observation, pending.end)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
