"""What the handler reads from LangChain messages: text, sizes, markers of compaction.

Pure functions over ``langchain_core`` message objects. Every marker checked
here is one the framework writes itself:

- ``SummarizationMiddleware``'s summary: a ``HumanMessage`` with
  ``additional_kwargs["lc_source"] == "summarization"``, after a
  ``RemoveMessage(id="__remove_all__")``;
- ``ClearToolUsesEdit``'s cleared tool result: ``response_metadata["context_editing"]
  == {"cleared": True, "strategy": "clear_tool_uses"}``;
- Anthropic's server-side compaction in ``ChatAnthropic`` output: a content block
  ``{"type": "compaction", "content": str | None, ...}``;
- langmem's ``RunningSummary(summary, summarized_message_ids,
  last_summarized_message_id)``, recognised by shape so langmem stays optional.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from otel_compaction.signals.tokens import estimate_tokens

LC_SOURCE = "lc_source"
SUMMARIZATION = "summarization"
REMOVE_ALL = "__remove_all__"  # langgraph.graph.message.REMOVE_ALL_MESSAGES
CONTEXT_EDITING = "context_editing"
COMPACTION_BLOCK = "compaction"
# langmem's default prompts for its summarizer call (short_term/summarization.py).
LANGMEM_PROMPTS = (
    "Create a summary of the conversation above:",
    "Extend this summary by taking into account the new messages above:",
)
LANGMEM_SUMMARY_PREFIX = "Summary of the conversation so far:"

_BLOCK_TEXT_KEYS = ("text", "content", "thinking")


def block_text(block: object) -> str:
    """The text of one content block: its text, nested content, or tool input as JSON."""
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return ""
    parts = [block[k] for k in _BLOCK_TEXT_KEYS if isinstance(block.get(k), str)]
    nested = block.get("content")
    if isinstance(nested, list):
        parts.extend(block_text(item) for item in nested)
    if isinstance(block.get("input"), Mapping):
        parts.append(_json(block["input"]))
    return "\n".join(p for p in parts if p)


def message_text(message: BaseMessage) -> str:
    """All text a message puts in the context, tool-call arguments included."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(t for t in (block_text(b) for b in content) if t)
    if isinstance(message, AIMessage) and message.tool_calls and isinstance(content, str):
        calls = " ".join(f"{c['name']} {_json(c.get('args', {}))}" for c in message.tool_calls)
        text = f"{text}\n{calls}" if text else calls
    return text


def message_tokens(message: BaseMessage) -> int:
    """Estimated tokens of one message."""
    return estimate_tokens(message_text(message))


def messages_tokens(messages: Iterable[BaseMessage]) -> int:
    """Estimated tokens of several messages."""
    return sum(message_tokens(m) for m in messages)


def message_key(message: BaseMessage) -> str:
    """A stable key for a message: its id, else its type and text."""
    if message.id:
        return message.id
    return f"{message.type}:{hash(message_text(message))}"


def is_summary_message(message: BaseMessage) -> bool:
    """Whether a message is a summary a framework wrote into the history."""
    if message.additional_kwargs.get(LC_SOURCE) == SUMMARIZATION:
        return True
    if isinstance(message, SystemMessage) and isinstance(message.content, str):
        return message.content.startswith(LANGMEM_SUMMARY_PREFIX)
    return False


def is_cleared_tool_message(message: BaseMessage) -> bool:
    """Whether ``ClearToolUsesEdit`` replaced this tool result with a placeholder."""
    if not isinstance(message, ToolMessage):
        return False
    marker = message.response_metadata.get(CONTEXT_EDITING)
    return isinstance(marker, Mapping) and marker.get("cleared") is True


def tool_message_key(message: ToolMessage) -> str:
    """The key of a tool result: its tool-call id, else its message key."""
    return message.tool_call_id or message_key(message)


def compaction_blocks(message: BaseMessage) -> list[Mapping[str, Any]]:
    """The ``{"type": "compaction"}`` content blocks of a response."""
    if isinstance(message.content, str):
        return []
    return [
        b for b in message.content if isinstance(b, Mapping) and b.get("type") == COMPACTION_BLOCK
    ]


def live_context(messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    """The part of a history the provider reads: from the last compaction block on.

    Anthropic ignores everything before a compaction block, but LangChain keeps
    the full history in state; sizes must start at the block.
    """
    for index in range(len(messages) - 1, -1, -1):
        if compaction_blocks(messages[index]):
            return messages[index:]
    return messages


@dataclass(frozen=True, slots=True)
class SummarizationOutput:
    """The state update of a ``SummarizationMiddleware`` firing."""

    summary: HumanMessage
    kept: tuple[BaseMessage, ...]


def summarization_output(outputs: object) -> SummarizationOutput | None:
    """Recognise ``[RemoveMessage(__remove_all__), summary, *kept]`` in a state update."""
    if not isinstance(outputs, Mapping):
        return None
    messages = outputs.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return None
    head, summary = messages[0], messages[1]
    if not (isinstance(head, RemoveMessage) and head.id == REMOVE_ALL):
        return None
    if not (isinstance(summary, HumanMessage) and is_summary_message(summary)):
        return None
    kept = tuple(m for m in messages[2:] if isinstance(m, BaseMessage))
    return SummarizationOutput(summary, kept)


def state_messages(inputs: object) -> list[BaseMessage] | None:
    """The ``messages`` of a graph state (dict or object), when it has them."""
    value = inputs.get("messages") if isinstance(inputs, Mapping) else None
    if value is None and not isinstance(inputs, Mapping | str | list):
        value = getattr(inputs, "messages", None)
    if isinstance(value, list) and all(isinstance(m, BaseMessage) for m in value):
        return value
    return None


def is_running_summary(value: object) -> bool:
    """Whether ``value`` has the shape of langmem's ``RunningSummary``."""
    return (
        type(value).__name__ == "RunningSummary"
        and isinstance(getattr(value, "summary", None), str)
        and isinstance(getattr(value, "summarized_message_ids", None), set | frozenset)
    )


def find_running_summary(state: object) -> Any | None:
    """The ``RunningSummary`` held in a state (at the top or under ``context``), if any."""
    if not isinstance(state, Mapping):
        return None
    candidates = list(state.values())
    context = state.get("context")
    if isinstance(context, Mapping):
        candidates.extend(context.values())
    return next((v for v in candidates if is_running_summary(v)), None)


def is_langmem_summarizer_input(messages: Sequence[BaseMessage]) -> bool:
    """Whether a chat call is langmem's summarizer (its default closing prompt)."""
    if not messages:
        return False
    last = messages[-1]
    text = last.content if isinstance(last.content, str) else ""
    return any(prompt in text for prompt in LANGMEM_PROMPTS)


def _json(value: object) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
