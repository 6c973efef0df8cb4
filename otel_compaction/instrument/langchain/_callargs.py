"""What the handler reads from LangChain's callback arguments (besides the messages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from otel_compaction.instrument.langchain import _messages as msg

INTERNAL_KEY = "lc_internal_call"  # langchain.agents.middleware.internal_call_transformer


def is_internal(metadata: dict[str, Any], history: Sequence[BaseMessage]) -> bool:
    """A middleware-internal call (a summarizer), not a step of the agent."""
    if metadata.get(msg.LC_SOURCE) == msg.SUMMARIZATION or INTERNAL_KEY in metadata:
        return True
    return msg.is_langmem_summarizer_input(history)


def response_message(response: LLMResult) -> AIMessage | None:
    """The first chat message of a model's result, if any."""
    for generations in response.generations:
        for generation in generations:
            if isinstance(generation, ChatGeneration) and isinstance(generation.message, AIMessage):
                return generation.message
    return None


def has_usage(response: AIMessage | None) -> bool:
    """Whether the response reports its token usage."""
    return bool(response is not None and response.usage_metadata)


def model_name(metadata: dict[str, Any], kwargs: dict[str, Any]) -> str | None:
    """The requested model: LangSmith's ``ls_model_name``, else the invocation parameters."""
    params = kwargs.get("invocation_params") or {}
    for value in (metadata.get("ls_model_name"), params.get("model"), params.get("model_name")):
        if isinstance(value, str) and value:
            return value
    return None


def input_text(inputs: Any) -> str:
    """The text a runnable was given: a prompt string, messages, or a state's messages."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, list):
        return "\n".join(msg.message_text(m) for m in inputs if isinstance(m, BaseMessage))
    if isinstance(inputs, dict):
        messages = msg.state_messages(inputs) or []
        return "\n".join(msg.message_text(m) for m in messages)
    return ""


def text_or_none(value: object) -> str | None:
    """``value`` if it is a non-empty string."""
    return value if isinstance(value, str) and value else None
