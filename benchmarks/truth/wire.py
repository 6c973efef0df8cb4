"""The six call shapes the truth harness drives through the real SDK clients.

Anthropic Messages, OpenAI Chat Completions and OpenAI Responses, each plain and
streaming, against the project's scripted fake (``otel_compaction.testing.llm_api``)
over ``httpx2.MockTransport``. A wire turns one agent step into the SDK call its
provider wants and hands back the history items the response adds, in the
provider's own shape (plain dicts, as an agent keeps them), so the agents and
compactions of ``benchmarks.truth.agent`` are written once for all six.

One tool call per turn: a turn is the assistant's item(s) and one tool result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai

from otel_compaction.testing import _llm_anthropic, _llm_openai
from otel_compaction.testing.llm_api import FakeLLMAPI, estimate_tokens

MODEL_ANTHROPIC = "claude-sonnet-5-5"
MODEL_OPENAI = "gpt-5.4"
MAX_TOKENS = 512
NEVER = 10**9
"""The server-side trigger the harness sends: the scenario, not the fake, decides when."""

Item = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    """What one call gave the agent: the items to append and the server's context count."""

    items: list[Item]
    input_tokens: int


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool definition in neutral form: its name, description and string arguments."""

    name: str
    description: str
    arguments: tuple[str, ...] = ("path",)


def _schema(arguments: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in arguments},
        "required": list(arguments),
    }


class Wire:
    """One provider API and call style; subclasses fill in the provider's shapes."""

    name = ""
    model = ""
    can_compact_server_side = False

    def __init__(self, api: FakeLLMAPI, stream: bool) -> None:
        self.api = api
        self.stream = stream

    def user(self, text: str) -> Item:
        """A user message carrying ``text`` (the same shape in the three APIs)."""
        return {"role": "user", "content": text}

    def tools(self, specs: Sequence[ToolSpec]) -> list[Item]:
        """The tool definitions in the provider's shape."""
        raise NotImplementedError

    def call(
        self, system: str, tools: list[Item], items: list[Item], server_compaction: bool
    ) -> Answer:
        """One call with the history ``items``; ``server_compaction`` asks the server to compact."""
        raise NotImplementedError

    def tool_result(self, call_id: str, output: str) -> Item:
        """The item that sends a tool's output back."""
        raise NotImplementedError

    def result_key(self) -> str:
        """The key of a tool result item that holds the output text (mutated in place)."""
        return "content"

    def context_tokens(self, system: str, tools: list[Item], items: list[Item]) -> int:
        """The fake server's count of a request with this history (what usage will say)."""
        raise NotImplementedError


class AnthropicWire(Wire):
    """``messages.create`` / ``messages.stream``; the beta client for server-side compaction."""

    name = "anthropic"
    model = MODEL_ANTHROPIC
    can_compact_server_side = True

    def __init__(self, api: FakeLLMAPI, stream: bool) -> None:
        super().__init__(api, stream)
        http = httpx2.Client(transport=api.mock_transport())
        self.client = anthropic.Anthropic(api_key="sk-ant-truth", http_client=http, max_retries=0)

    def tools(self, specs: Sequence[ToolSpec]) -> list[Item]:
        return [
            {"name": s.name, "description": s.description, "input_schema": _schema(s.arguments)}
            for s in specs
        ]

    def call(
        self, system: str, tools: list[Item], items: list[Item], server_compaction: bool
    ) -> Answer:
        options: dict[str, Any] = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system,
            "messages": items,
            "tools": tools,
        }
        messages: Any = self.client.messages
        if server_compaction:
            edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": NEVER}}
            options.update(context_management={"edits": [edit]}, betas=["compact-2026-01-12"])
            messages = self.client.beta.messages
        if self.stream:
            with messages.stream(**options) as stream:
                message = stream.get_final_message()
        else:
            message = messages.create(**options)
        content = [block.model_dump(exclude_none=True) for block in message.content]
        usage = message.usage
        tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return Answer([{"role": "assistant", "content": content}], tokens)

    def tool_result(self, call_id: str, output: str) -> Item:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        return {"role": "user", "content": [block]}

    def result_key(self) -> str:
        return "content"

    def context_tokens(self, system: str, tools: list[Item], items: list[Item]) -> int:
        return _llm_anthropic._context_tokens({"system": system, "tools": tools, "messages": items})


def _openai_client(api: FakeLLMAPI) -> openai.OpenAI:
    http = httpx2.Client(transport=api.mock_transport())
    return openai.OpenAI(api_key="sk-openai-truth", http_client=http, max_retries=0)


class ChatWire(Wire):
    """``chat.completions.create`` / ``chat.completions.stream``; the system prompt leads."""

    name = "chat"
    model = MODEL_OPENAI

    def __init__(self, api: FakeLLMAPI, stream: bool) -> None:
        super().__init__(api, stream)
        self.client = _openai_client(api)
        self._system: Item = {}

    def tools(self, specs: Sequence[ToolSpec]) -> list[Item]:
        return [
            {
                "type": "function",
                "function": {
                    "name": s.name,
                    "description": s.description,
                    "parameters": _schema(s.arguments),
                },
            }
            for s in specs
        ]

    def _system_message(self, system: str) -> Item:
        # One dict for the whole run, as an agent keeps its system message.
        if self._system.get("content") != system:
            self._system = {"role": "system", "content": system}
        return self._system

    def call(
        self, system: str, tools: list[Item], items: list[Item], server_compaction: bool
    ) -> Answer:
        del server_compaction  # Chat Completions has no server-side compaction
        messages = [self._system_message(system), *items]
        completions = self.client.chat.completions
        if self.stream:
            with completions.stream(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                stream_options={"include_usage": True},
            ) as stream:
                completion: Any = stream.get_final_completion()
        else:
            completion = completions.create(model=self.model, messages=messages, tools=tools)  # type: ignore[arg-type]
        message = completion.choices[0].message
        item: Item = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in message.tool_calls
            ]
        tokens = completion.usage.prompt_tokens if completion.usage else 0
        return Answer([item], tokens)

    def tool_result(self, call_id: str, output: str) -> Item:
        return {"role": "tool", "tool_call_id": call_id, "content": output}

    def context_tokens(self, system: str, tools: list[Item], items: list[Item]) -> int:
        messages = [self._system_message(system), *items]
        return max(1, estimate_tokens(messages) + estimate_tokens(tools))


class ResponsesWire(Wire):
    """``responses.create`` / ``responses.stream`` with the whole input sent each time."""

    name = "responses"
    model = MODEL_OPENAI
    can_compact_server_side = True

    def __init__(self, api: FakeLLMAPI, stream: bool) -> None:
        super().__init__(api, stream)
        self.client = _openai_client(api)

    def tools(self, specs: Sequence[ToolSpec]) -> list[Item]:
        return [
            {
                "type": "function",
                "name": s.name,
                "description": s.description,
                "parameters": _schema(s.arguments),
                "strict": False,
            }
            for s in specs
        ]

    def call(
        self, system: str, tools: list[Item], items: list[Item], server_compaction: bool
    ) -> Answer:
        options: dict[str, Any] = {
            "model": self.model,
            "instructions": system,
            "input": items,
            "tools": tools,
        }
        if server_compaction:
            options["context_management"] = [{"type": "compaction", "compact_threshold": NEVER}]
        if self.stream:
            with self.client.responses.stream(**options) as stream:
                response: Any = stream.get_final_response()
        else:
            response = self.client.responses.create(**options)
        out = [_input_item(item.model_dump(exclude_none=True)) for item in response.output]
        tokens = response.usage.input_tokens if response.usage else 0
        return Answer(out, tokens)

    def tool_result(self, call_id: str, output: str) -> Item:
        return {"type": "function_call_output", "call_id": call_id, "output": output}

    def result_key(self) -> str:
        return "output"

    def context_tokens(self, system: str, tools: list[Item], items: list[Item]) -> int:
        return _llm_openai._input_tokens({"instructions": system, "tools": tools, "input": items})


def _input_item(item: Item) -> Item:
    """An output item as the next request's input item (what the API accepts back)."""
    if item.get("type") == "function_call":
        return {k: item[k] for k in ("type", "call_id", "name", "arguments") if k in item}
    return item


WIRES: Mapping[str, tuple[Callable[[FakeLLMAPI, bool], Wire], bool]] = {
    "anthropic": (AnthropicWire, False),
    "anthropic_stream": (AnthropicWire, True),
    "chat": (ChatWire, False),
    "chat_stream": (ChatWire, True),
    "responses": (ResponsesWire, False),
    "responses_stream": (ResponsesWire, True),
}
"""Every wire by name: its class and whether it streams."""

SERVER_WIRES = ("anthropic", "anthropic_stream", "responses", "responses_stream")
"""The wires whose API can compact server-side."""


def make_wire(name: str, api: FakeLLMAPI) -> Wire:
    """The wire ``name`` (a key of :data:`WIRES`) over ``api``."""
    factory, stream = WIRES[name]
    return factory(api, stream)


def tool_call_arguments(item: Item) -> dict[str, Any]:
    """The arguments of the tool call in an assistant item (for tests of the wires)."""
    for block in item.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            return dict(block.get("input") or {})
    for call in item.get("tool_calls") or ():
        return dict(json.loads(call["function"]["arguments"] or "{}"))
    if item.get("type") == "function_call":
        return dict(json.loads(item.get("arguments") or "{}"))
    return {}
