"""A strands-agents agent that compacts with ``SummarizingConversationManager``, for real.

Run in the strands environment: ``python strands_agent.py on|off [model|agent]``. The agent reads
files with a tool whose outputs fill a 10,000-token window (``context_window_limit``),
so strands' proactive compression summarizes the oldest messages several times
(with its default summarizer prompt, through the agent's own model), against the
scripted OpenAI-compatible server on loopback. Prints the host's results and, with
the instrumentation on, the spans and findings (``_capture``).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.frameworks.drivers._capture import emit, instrumented, requests

STEPS = 30
SUMMARY = (
    "## Conversation Summary\n- Goal: audit the service's modules.\n"
    "- Decisions: read the modules in order.\n- Open errors: none.\n"
    "## Tools Executed\n- read_file on {count} module files, up to {last}; each held "
    "configuration tables.\n## Next steps\n- Keep reading the remaining modules."
)


def _is_summarizer(request: RecordedRequest) -> bool:
    messages = request.body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    return "conversation summarizer" in system or "Condense" in system


def _script(request: RecordedRequest) -> Reply:
    messages = request.body.get("messages") or []
    if _is_summarizer(request):
        read = re.findall(r"module_\d+\.py", json.dumps(messages))
        return Reply(SUMMARY.format(count=len(set(read)), last=read[-1] if read else "none"))
    done = _script.agent_calls  # type: ignore[attr-defined]
    _script.agent_calls = done + 1  # type: ignore[attr-defined]
    if done >= STEPS:
        return Reply("All modules audited: no problem found.")
    return Reply("", tool_calls=(ToolCall("read_file", {"path": f"module_{done}.py"}),))


_script.agent_calls = 0  # type: ignore[attr-defined]


WINDOWS_SEEN: set[int | None] = set()
"""The window of the framework call open while a tool runs (instrumented runs only)."""


def read_file(path: str) -> str:
    """Read a file of the service (returns its text)."""
    if "otel_compaction.instrument.frameworks" in sys.modules:
        from otel_compaction.instrument._framework import current_call

        call = current_call()
        WINDOWS_SEEN.add(call.window if call is not None else None)
    return f"# {path}\n" + "\n".join(f"SETTING_{i} = {i * 7} # {path} line {i}" for i in range(90))


def run(base_url: str, summarizer: str) -> dict[str, Any]:
    """One agent run; what the host gets back. ``summarizer``: ``model`` (strands' default,
    the agent's own model) or ``agent`` (a ``summarization_agent`` of its own, which
    strands gives a no-op tool, so only the hook tells its calls)."""
    from strands import Agent, tool
    from strands.agent.conversation_manager import SummarizingConversationManager
    from strands.models.openai import OpenAIModel

    model = OpenAIModel(
        client_args={"api_key": "test", "base_url": base_url + "/v1"},
        model_id="gpt-4o",
        context_window_limit=10_000,
    )
    extra: dict[str, Any] = {}
    if summarizer == "agent":
        extra["summarization_agent"] = Agent(
            model=model,
            system_prompt="Condense the messages above into notes.",
            callback_handler=None,
        )
    manager = SummarizingConversationManager(
        summary_ratio=0.5, preserve_recent_messages=4, proactive_compression=True, **extra
    )
    agent = Agent(
        model=model,
        tools=[tool(read_file)],
        conversation_manager=manager,
        system_prompt="You audit a Python service. Read every module with read_file.",
        callback_handler=None,
    )
    result = agent("Audit the service's modules one by one and report problems.")
    return {"output": str(result), "messages": len(agent.messages)}


def main() -> None:
    on = sys.argv[1] == "on"
    api = FakeLLMAPI(_script)
    with instrumented(on) as capture, api.serve() as base_url:
        result = run(base_url, sys.argv[2] if len(sys.argv) > 2 else "model")
    result["requests"] = requests(api, _is_summarizer)
    if on:
        result["framework_windows"] = sorted(WINDOWS_SEEN, key=str)
    emit(result, capture)


if __name__ == "__main__":
    main()
