"""Scripted chat models and agents for the LangChain tests (no network).

``ScriptedAgentModel`` asks for one ``read_file`` call per turn and logs every
input it receives (the ground truth an SDK-level observer would see);
``GrowingSummarizer`` returns summaries that re-include ever more facts, the
shape of re-expansion livelock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

TOOL_OUTPUT = "lorem ipsum dolor sit " * 20


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: {TOOL_OUTPUT}"


class ScriptedAgentModel(BaseChatModel):
    """Asks for ``read_file`` on each of its first ``turns`` calls, then answers."""

    turns: int = 10
    calls: int = 0
    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    extra_content: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedAgentModel:
        """Tools are scripted; binding changes nothing."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.inputs.append(list(messages))
        index = self.calls
        self.calls += 1
        if index >= self.turns:
            return _result(AIMessage(content="done"))
        call = {"name": "read_file", "args": {"path": f"f{index}.py"}, "id": f"call_{index}"}
        return _result(AIMessage(content=f"step {index}", tool_calls=[call]))


class GrowingSummarizer(BaseChatModel):
    """Summary ``k`` carries ``base + growth * k`` facts: each one longer than the last."""

    base: int = 5
    growth: int = 0
    count: int = 0
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "growing-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(str(messages[-1].content))
        k = self.count
        self.count += 1
        facts = " ".join(f"fact{k}_{j}" for j in range(self.base + self.growth * k))
        return _result(AIMessage(content=f"summary {k}: goal fix the bug. {facts}"))


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


def summarizing_agent(
    model: BaseChatModel,
    summarizer: BaseChatModel,
    *,
    trigger_tokens: int,
    extra: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    checkpointer: bool = True,
) -> Any:
    """An agent whose history ``SummarizationMiddleware`` compacts past ``trigger_tokens``."""
    middleware = SummarizationMiddleware(
        model=model, summarizer=summarizer, trigger=("tokens", trigger_tokens), keep=("messages", 2)
    )
    return create_agent(
        model,
        tools=[read_file],
        middleware=[*extra, middleware],
        checkpointer=InMemorySaver() if checkpointer else None,
    )


def run(agent: Any, thread_id: str | None = "thread-1", text: str = "fix the bug") -> Any:
    """Invoke ``agent`` once on ``thread_id`` (no thread: a stateless run)."""
    config: dict[str, Any] = {"recursion_limit": 500}
    if thread_id is not None:
        config["configurable"] = {"thread_id": thread_id}
    return agent.invoke({"messages": [HumanMessage(text)]}, config=config)
