"""A pydantic-ai agent that compacts with the documented summarizing history processor, for real.

Run in the pydantic-ai environment: ``python pydantic_ai_agent.py on|off [documented|notes]``. The
agent reads files with a tool; a ``ProcessHistory`` capability summarizes the older
messages with a second ``Agent`` of its own instructions whenever the history grows
past twelve messages, keeping the first request, the summary and a verbatim tail
(the shape of pydantic-ai's message-history documentation), against the scripted
OpenAI-compatible server on loopback. Prints the host's results and, with the
instrumentation on, the spans and findings (``_capture``).
"""

# No `from __future__ import annotations`: pydantic-ai reads the processor's
# annotations at run time.

import json
import re
import sys
from typing import Any

from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.frameworks.drivers._capture import emit, instrumented, requests

STEPS = 30
INSTRUCTIONS = {
    "documented": (
        "Summarize this conversation, omitting small talk and unrelated topics. "
        "Focus on the technical discussion and next steps."
    ),
    "notes": "Write terse notes of the messages above for later use.",
}
SUMMARY = (
    "Goal: audit the service's modules.\nPlan: read every module with read_file.\n"
    "Decisions: settings are read in order; {count} modules read so far, up to {last}.\n"
    "Open errors: none.\nNext action: read the next module."
)


def _is_summarizer(request: RecordedRequest) -> bool:
    messages = request.body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    return any(text in system for text in INSTRUCTIONS.values())


class Script:
    """The scripted model: the summarizer's answers, and the agent's tool calls then its answer."""

    def __init__(self) -> None:
        self.agent_calls = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.body.get("messages") or []
        if _is_summarizer(request):
            read = re.findall(r"module_\d+\.py", json.dumps(messages))
            return Reply(SUMMARY.format(count=len(set(read)), last=read[-1] if read else "none"))
        done, self.agent_calls = self.agent_calls, self.agent_calls + 1
        if done >= STEPS:
            return Reply("All modules audited: no problem found.")
        return Reply("", tool_calls=(ToolCall("read_file", {"path": f"module_{done}.py"}),))


def read_file(path: str) -> str:
    """Read a file of the service (returns its text)."""
    return f"# {path}\n" + "\n".join(f"SETTING_{i} = {i * 7} # {path} line {i}" for i in range(90))


def run(base_url: str, instructions: str) -> dict[str, Any]:
    """One agent run; what the host gets back. ``instructions``: the summarizer's,
    ``documented`` (pydantic-ai's example) or ``notes`` (no word of summaries: only the
    hook tells its calls)."""
    from pydantic_ai import Agent, ModelMessage, ModelRequest
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        "gpt-4o", provider=OpenAIProvider(base_url=base_url + "/v1", api_key="test")
    )
    summarize_agent = Agent(model, instructions=INSTRUCTIONS[instructions])

    async def summarize_old_messages(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) <= 12:
            return messages
        cut = len(messages) - 4
        if isinstance(messages[cut], ModelRequest):
            cut -= 1  # the kept tail starts at a tool call, never at its orphaned result
        summary = await summarize_agent.run(message_history=messages[:cut])
        return [messages[0], *summary.new_messages(), *messages[cut:]]

    agent = Agent(
        model,
        system_prompt="You audit a Python service. Read every module with read_file.",
        tools=[read_file],
        capabilities=[ProcessHistory(summarize_old_messages)],
    )
    result = agent.run_sync("Audit the service's modules one by one and report problems.")
    return {"output": result.output, "messages": len(result.all_messages())}


def main() -> None:
    on = sys.argv[1] == "on"
    api = FakeLLMAPI(Script())
    with instrumented(on) as capture, api.serve() as base_url:
        result = run(base_url, sys.argv[2] if len(sys.argv) > 2 else "documented")
    result["requests"] = requests(api, _is_summarizer)
    emit(result, capture)


if __name__ == "__main__":
    main()
