"""One pass over a chat model's input: sizes, new content, newly cleared tool results.

A model call's input is the whole history; the pass costs a few dictionary
look-ups per message, and each message's text is estimated once per
conversation (sizes are remembered by message key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from otel_compaction.instrument.langchain import _messages as msg
from otel_compaction.instrument.langchain._state import ConversationMemory


@dataclass(slots=True)
class InputScan:
    """What one model call's input says.

    Args:
        live_tokens: estimated tokens of the part the provider reads (from the
            last compaction block on), unscaled.
        new_content: scaled tokens of task content not seen before (user text,
            tool results; not summaries, not cleared results).
        tool_outputs: scaled sizes of the new tool results, oldest first.
        cleared: tool results cleared by ``ClearToolUsesEdit`` for the first time.
    """

    live_tokens: int = 0
    new_content: int = 0
    tool_outputs: list[int] = field(default_factory=list)
    cleared: list[ToolMessage] = field(default_factory=list)


def scan_input(messages: Sequence[BaseMessage], state: ConversationMemory) -> InputScan:
    """Scan a model call's input once, updating the conversation's memory."""
    scan = InputScan()
    total = 0
    for message in messages:
        key = msg.message_key(message)
        cleared = isinstance(message, ToolMessage) and msg.is_cleared_tool_message(message)
        size = _size(message, key + ":cleared" if cleared else key, state)
        if isinstance(message, AIMessage) and msg.compaction_blocks(message):
            total = 0  # the provider reads from the compaction block on
        total += size
        if (
            cleared
            and isinstance(message, ToolMessage)
            and msg.tool_message_key(message) not in state.cleared
        ):
            scan.cleared.append(message)
        if key not in state.seen:
            state.seen.put(key, 0)
            if not cleared:
                _count_new(message, size, scan, state)
    scan.live_tokens = total
    return scan


def _size(message: BaseMessage, key: str, state: ConversationMemory) -> int:
    size = state.sizes.peek(key)
    if size is None:
        size = msg.message_tokens(message)
        state.sizes.put(key, size)
    return size


def _count_new(message: BaseMessage, size: int, scan: InputScan, state: ConversationMemory) -> None:
    if isinstance(message, ToolMessage):
        state.tool_tokens.put(msg.tool_message_key(message), size)
        scan.tool_outputs.append(state.scaled(size))
        scan.new_content += state.scaled(size)
    elif message.type == "human" and not msg.is_summary_message(message):
        scan.new_content += state.scaled(size)
