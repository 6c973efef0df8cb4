"""The two wire formats the demo's agents speak, over the real SDK clients.

:class:`AnthropicBackend` calls Anthropic Messages (``messages.create``, or
``beta.messages.create`` with ``compact_20260112`` context management for
server-side compaction); :class:`OpenAIChatBackend` calls OpenAI Chat
Completions. Both take and return plain-dict messages, so the agent can keep
and count its history the same way for either provider.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from otel_compaction.demo.plan import SUMMARIZER_MARKER
from otel_compaction.demo.workspace import TOOL_SPECS

if TYPE_CHECKING:  # the SDKs are optional: imported where the clients are made
    import anthropic
    import openai

Message = dict[str, Any]
Call = tuple[str, str, dict[str, Any]]
"""A tool call: (id, tool name, arguments)."""

SUMMARIZER_SYSTEM = (
    f"{SUMMARIZER_MARKER}\nKeep the goal, the plan, the decisions, the open errors and "
    "the next action, and every constraint of the task."
)
COMPACT_EDIT: Mapping[str, Any] = {"edits": [{"type": "compact_20260112"}]}
COMPACT_BETA = "compact-2026-01-12"
MAX_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model response as the agent uses it."""

    assistant: Message
    calls: tuple[Call, ...]
    input_tokens: int


class Backend(Protocol):
    """One provider's wire format."""

    provider: str
    model: str
    tools: list[dict[str, Any]]
    """The tool definitions sent with every turn, in the provider's shape."""

    def call(self, system: str, messages: Sequence[Message]) -> ModelTurn:
        """One turn: the model's answer to the history."""

    def tool_results(self, calls: Sequence[Call], outputs: Sequence[str]) -> list[Message]:
        """The messages carrying the tools' outputs back."""

    def summarize(self, prompt: str) -> str:
        """The summarizer's answer to ``prompt`` (a separate call, its own system prompt)."""


def user(text: str) -> Message:
    """A user message (the same shape in both APIs)."""
    return {"role": "user", "content": text}


class AnthropicBackend:
    """Anthropic Messages: ``messages.create``, or the beta API with server-side compaction."""

    provider = "anthropic"

    def __init__(
        self, client: anthropic.Anthropic, model: str, *, server_compaction: bool = False
    ) -> None:
        self.client = client
        self.model = model
        self.server_compaction = server_compaction
        self.tools = [
            {
                "name": name,
                "description": description,
                "input_schema": _schema(arguments),
            }
            for name, description, arguments in TOOL_SPECS
        ]

    def call(self, system: str, messages: Sequence[Message]) -> ModelTurn:
        """One ``messages.create``; ``beta.messages.create`` when compacting server-side."""
        options: dict[str, Any] = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": list(messages),
            "tools": self.tools,
        }
        message: Any
        if self.server_compaction:
            options.update(context_management=dict(COMPACT_EDIT), betas=[COMPACT_BETA])
            message = self.client.beta.messages.create(**options)
        else:
            message = self.client.messages.create(**options)
        content = [block.model_dump(exclude_none=True) for block in message.content]
        calls = tuple(
            (str(b["id"]), str(b["name"]), dict(b.get("input") or {}))
            for b in content
            if b.get("type") == "tool_use"
        )
        usage = message.usage
        tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return ModelTurn({"role": "assistant", "content": content}, calls, tokens)

    def tool_results(self, calls: Sequence[Call], outputs: Sequence[str]) -> list[Message]:
        """One user message with a ``tool_result`` block per call."""
        blocks = [
            {"type": "tool_result", "tool_use_id": call_id, "content": output}
            for (call_id, _, _), output in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "content": blocks}]

    def summarize(self, prompt: str) -> str:
        """A plain ``messages.create`` with the summarizer's system prompt."""
        message = self.client.messages.create(
            model=self.model,
            max_tokens=MAX_TOKENS,
            system=SUMMARIZER_SYSTEM,
            messages=[{"role": "user", "content": prompt}],
        )
        return "".join(getattr(block, "text", "") for block in message.content)


class OpenAIChatBackend:
    """OpenAI Chat Completions: ``chat.completions.create`` with function tools."""

    provider = "openai"

    def __init__(self, client: openai.OpenAI, model: str) -> None:
        self.client = client
        self.model = model
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": _schema(arguments),
                },
            }
            for name, description, arguments in TOOL_SPECS
        ]

    def call(self, system: str, messages: Sequence[Message]) -> ModelTurn:
        """One ``chat.completions.create``; the system prompt is the first message."""
        options: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *messages],
            "tools": self.tools,
        }
        completion = self.client.chat.completions.create(**options)
        message = completion.choices[0].message
        calls = tuple(
            (call.id, call.function.name, json.loads(call.function.arguments or "{}"))
            for call in message.tool_calls or ()
            if call.type == "function"
        )
        tokens = completion.usage.prompt_tokens if completion.usage else 0
        return ModelTurn(message.model_dump(exclude_none=True), calls, tokens)

    def tool_results(self, calls: Sequence[Call], outputs: Sequence[str]) -> list[Message]:
        """One ``tool`` message per call."""
        return [
            {"role": "tool", "tool_call_id": call_id, "content": output}
            for (call_id, _, _), output in zip(calls, outputs, strict=True)
        ]

    def summarize(self, prompt: str) -> str:
        """A ``chat.completions.create`` with the summarizer's system prompt."""
        completion = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": SUMMARIZER_SYSTEM},
                {"role": "user", "content": prompt},
            ],
        )
        return completion.choices[0].message.content or ""


def _schema(arguments: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in arguments},
        "required": list(arguments),
    }
