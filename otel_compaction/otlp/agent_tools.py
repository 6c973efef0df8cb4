"""The agents' tool events joined to their turns, for rediscovery: Claude Code and Codex CLI.

Rediscovery (docs/concepts.md#rediscovery) compares each tool call with the calls made
before a compaction, by a stable hash of its tool name and canonical input. Both agents
log a ``tool_result`` event per call with its tool name and, where the user allows it,
its input; :class:`AgentTools` holds them per conversation and hands them to the next
agent turn, as the calls of the response before it (late key texts,
``lineage.rediscovery.late_key_text``), with their results' sizes:

* Claude Code (``claude_code.tool_decision`` / ``tool_result``): a call belongs to the
  response whose ``api_request`` is logged first after its ``tool_decision`` (Claude Code
  runs a tool as soon as its block has streamed, before the response ends and its request
  is logged); a result with no decision seen, to the response logged last. Its input is
  ``tool_input``, sent only with ``OTEL_LOG_TOOL_DETAILS=1``; without it the call's key
  is unknown, and so is the conversation's rediscovery (never zero). Its result's size is
  ``tool_result_size_bytes`` / 4 tokens.
* Codex (``codex.tool_decision`` / ``codex.tool_result``): a call belongs to the response
  whose ``response.completed`` came last before it (Codex runs the calls after the
  response). Its input is ``arguments``; its result's size ``output``'s characters / 4.
  Only calls with a ``codex.tool_decision`` count: the ``exec`` wrapper around nested
  calls (Codex 0.150's code mode) has none, and counting it too would count each call
  twice.

The calls of a turn's response are known only with the next turn, so those of a
conversation's last response are never counted. Tool events say nothing of the context
that made the call: a Claude Code sub-agent's calls, logged under the session's id,
count as the session's own (its requests, another context, are not turns). Held calls are bounded
(``MAX_CALLS`` per conversation, ``max_conversations`` conversations) and not in the
processor's snapshot: a restart forgets the calls of at most one response per
conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from otel_compaction import semconv as sc
from otel_compaction._bounded import BoundedMap
from otel_compaction._count import as_count
from otel_compaction.lineage.rediscovery import late_key_text
from otel_compaction.otlp.values import AttrValue, as_str
from otel_compaction.signals.tokens import tokens_for_chars

MAX_CALLS: Final = 256
"""Tool calls held per conversation (the oldest go first)."""

CC_DECISION: Final = frozenset(
    {sc.CLAUDE_CODE_EVENT_TOOL_DECISION, sc.CLAUDE_CODE_EVENT_TOOL_DECISION.split(".")[1]}
)
CC_RESULT: Final = frozenset(
    {sc.CLAUDE_CODE_EVENT_TOOL_RESULT, sc.CLAUDE_CODE_EVENT_TOOL_RESULT.split(".")[1]}
)
CODEX_TOOL: Final = frozenset({sc.CODEX_EVENT_TOOL_DECISION, sc.CODEX_EVENT_TOOL_RESULT})
NAMES: Final = CC_DECISION | CC_RESULT | CODEX_TOOL
"""The tool events' names (Claude Code's short ones too)."""
KEYS: Final = frozenset(
    {
        sc.CLAUDE_CODE_TOOL_NAME,
        sc.CLAUDE_CODE_TOOL_USE_ID,
        sc.CLAUDE_CODE_TOOL_INPUT,
        sc.CLAUDE_CODE_TOOL_RESULT_BYTES,
        sc.CODEX_CALL_ID,
        sc.CODEX_TOOL_ARGUMENTS,
        sc.CODEX_TOOL_OUTPUT,
    }
)
"""The attributes the tool events are read by."""

ToolCalls = tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]
"""Tool names, late key texts and result tokens of the calls handed to a turn."""


@dataclass(slots=True)
class _Call:
    name: str
    response: int
    """The number of the agent response that asked for it (1 for the first)."""
    decided: bool = False
    done: bool = False
    key: str = ""
    tokens: int = 0


@dataclass(slots=True)
class _Conversation:
    responses: int = 0
    calls: dict[str, _Call] = field(default_factory=dict)


class AgentTools:
    """Per conversation, the tool calls of agent responses not yet handed to a turn.

    Args:
        max_conversations: conversations held (the least recently seen go first).
    """

    __slots__ = ("_conversations",)

    def __init__(self, max_conversations: int = 4096) -> None:
        self._conversations: BoundedMap[str, _Conversation] = BoundedMap(max_conversations)

    def observe(self, key: str, name: str, attrs: Mapping[str, AttrValue]) -> None:
        """One tool event (``name`` in ``NAMES``) of conversation ``key``."""
        codex = name in CODEX_TOOL
        call_id = as_str(attrs.get(sc.CODEX_CALL_ID if codex else sc.CLAUDE_CODE_TOOL_USE_ID))
        tool = as_str(attrs.get(sc.CLAUDE_CODE_TOOL_NAME))
        if not call_id or not tool:
            return
        conversation = self._conversations.cached(key, lambda _: _Conversation())
        call = conversation.calls.get(call_id)
        if call is None:
            # Claude Code's call streams before its response is logged; Codex's runs after.
            ahead = name in CC_DECISION
            call = _Call(tool, conversation.responses + ahead)
            conversation.calls[call_id] = call
            if len(conversation.calls) > MAX_CALLS:
                del conversation.calls[next(iter(conversation.calls))]
        if name in CC_DECISION or name == sc.CODEX_EVENT_TOOL_DECISION:
            call.decided = True
            return
        call.done = True
        call.key, call.tokens = _input_and_size(tool, attrs, codex)

    def turn(self, key: str, *, codex: bool) -> ToolCalls:
        """An agent turn of conversation ``key``: the calls of the responses before it (the
        late key texts of their inputs, "" when unknown) and their results' tokens."""
        conversation = self._conversations.cached(key, lambda _: _Conversation())
        conversation.responses += 1
        current = conversation.responses
        names: list[str] = []
        keys: list[str] = []
        tokens: list[int] = []
        for call_id, call in list(conversation.calls.items()):
            if call.response >= current:
                continue
            del conversation.calls[call_id]
            if not call.done or (codex and not call.decided):
                continue
            names.append(call.name)
            keys.append(call.key)
            tokens.append(call.tokens)
        return tuple(names), tuple(keys), tuple(tokens)


def _input_and_size(tool: str, attrs: Mapping[str, AttrValue], codex: bool) -> tuple[str, int]:
    """A result's late key text ("" when its input is unknown) and its size in tokens."""
    if codex:
        output = as_str(attrs.get(sc.CODEX_TOOL_OUTPUT)) or ""
        arguments = as_str(attrs.get(sc.CODEX_TOOL_ARGUMENTS))
        return late_key_text(tool, arguments), tokens_for_chars(len(output))
    size = as_count(attrs.get(sc.CLAUDE_CODE_TOOL_RESULT_BYTES))
    arguments = as_str(attrs.get(sc.CLAUDE_CODE_TOOL_INPUT))
    return late_key_text(tool, arguments), tokens_for_chars(max(size or 0, 0))
