"""A small coding agent on LiteLLM that condenses its history as OpenHands does.

Its model calls go through ``litellm.completion`` / ``acompletion`` (or
``litellm.responses``), to ``anthropic/...`` or ``openai/...`` on a scripted server
on loopback. When its history outgrows a budget, it summarizes the middle of it
through LiteLLM with the call shape of OpenHands' ``LLMSummarizingCondenser``: one
user message holding the summarizing prompt and the forgotten events, sent by the
condenser LLM, whose metadata the OpenHands CLI passes as ``litellm_extra_body``
(``extra_body={"metadata": {"tags": [..., "type:condenser", ...], ...}}``); then it
goes on with ``[system, task, summary, *recent]``.

Options: ``provider`` (anthropic | openai), ``mode`` (sync | async), ``stream``,
``api`` (chat | responses), ``instrument``, ``steps``, ``fault`` (make our
instrumentation raise everywhere it can), ``metadata`` (condenser | none),
``otel_callback`` (LiteLLM's own OpenTelemetry logger on too).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.frameworks.drivers._common import Telemetry, options, report

SYSTEM = "You are a careful coding agent working in the acme repository. Use the tools."
TASK = "Fix the failing test test_parse_dates in tests/test_parser.py without breaking others."
CONDENSER_PROMPT = (
    "You are maintaining a context-aware state summary for an interactive software agent. "
    "Summarize the events below: the user's goal, progress so far, files touched, and "
    "what remains.\n\n<EVENTS>\n"
)
SUMMARY = (
    "USER_CONTEXT: fix test_parse_dates in tests/test_parser.py. COMPLETED: {events} "
    "events reviewed; read parser.py and the test; the failure is a timezone offset "
    "dropped in parse_date. PENDING: patch parse_date to keep the offset, rerun the tests."
)
BUDGET_CHARS = 24000
KEEP_RECENT = 4
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} in the repository",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "run_tests")
]


def script(request: RecordedRequest) -> Reply:
    """The scripted model: summaries for the condenser, a fixed tool-use cycle otherwise."""
    body = json.dumps(request.body)
    if "context-aware state summary" in body:
        return Reply(SUMMARY.format(events=body.count("<EVENT>")))
    history = request.body.get("messages") or request.body.get("input") or []
    step = sum(1 for m in history if isinstance(m, dict) and m.get("role") == "assistant")
    if step % 3 == 2:
        return Reply(f"Step {step}: the parser drops the offset; checking the next file.")
    tool = "read_file" if step % 2 == 0 else "run_tests"
    return Reply("", tool_calls=(ToolCall(tool, {"path": f"src/acme/mod{step}.py"}),))


def tool_output(name: str, step: int) -> str:
    """What a tool returns: big enough for the history to outgrow its budget."""
    line = f"{name} output line for step {step}: parse_date(value, tz) returns naive datetime\n"
    return line * 14


class Agent:
    """The agent loop; ``call`` is the model call (sync or async, stream or not)."""

    def __init__(self, model: str, base: str, opts: dict[str, Any]) -> None:
        self.model = model
        self.base = base
        self.opts = opts
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]
        self.results: list[Any] = []
        self.condensations = 0

    def kwargs(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "api_base": self.base,
            "api_key": "test-key",
            "max_tokens": 512,
        }

    def condenser_kwargs(self) -> dict[str, Any]:
        """The condenser LLM's extra arguments, as the OpenHands CLI gives them."""
        if self.opts.get("metadata", "condenser") != "condenser":
            return {}
        metadata = {
            "trace_version": "1.4.0",
            "tags": [
                "app:openhands-cli",
                f"model:{self.model}",
                "type:condenser",
                "web_host:unspecified",
            ],
            "session_id": "session-1",
        }
        return {"extra_body": {"metadata": metadata}}

    def take(self, message: Any, step: int) -> None:
        """Append the model's message and, for a tool call, the tool's result."""
        content = message.get("content") if isinstance(message, dict) else message.content
        calls = message.get("tool_calls") if isinstance(message, dict) else message.tool_calls
        calls = [c if isinstance(c, dict) else c.model_dump() for c in calls or []]
        entry: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            entry["tool_calls"] = calls
        self.messages.append(entry)
        self.results.append({"content": content, "tools": [c["function"]["name"] for c in calls]})
        for call in calls:
            self.messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": tool_output(call["function"]["name"], step),
                }
            )
        if not calls:
            self.messages.append({"role": "user", "content": f"Continue with step {step + 1}."})

    def needs_condensing(self) -> bool:
        return sum(len(json.dumps(m)) for m in self.messages) > BUDGET_CHARS

    def split(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The forgotten events and the recent tail (starting at an assistant message)."""
        start = max(2, len(self.messages) - KEEP_RECENT)
        while start > 2 and self.messages[start]["role"] != "assistant":
            start -= 1
        return self.messages[2:start], self.messages[start:]

    def condense_with(self, summary: str, recent: list[dict[str, Any]]) -> None:
        self.condensations += 1
        self.results.append({"summary": summary})
        self.messages = [
            *self.messages[:2],
            {"role": "user", "content": f"Summary of the earlier work:\n{summary}"},
            *recent,
        ]

    def condenser_messages(self, forgotten: list[dict[str, Any]]) -> list[dict[str, Any]]:
        events = "\n".join(f"<EVENT>{json.dumps(m)}</EVENT>" for m in forgotten)
        return [{"role": "user", "content": CONDENSER_PROMPT + events + "\n</EVENTS>"}]


def run_sync(agent: Agent, litellm: Any, steps: int, stream: bool) -> None:
    for step in range(steps):
        if agent.needs_condensing():
            forgotten, recent = agent.split()
            response = litellm.completion(
                messages=agent.condenser_messages(forgotten),
                **agent.kwargs(),
                **agent.condenser_kwargs(),
            )
            agent.condense_with(response.choices[0].message.content, recent)
        response = litellm.completion(
            messages=list(agent.messages), tools=TOOLS, stream=stream, **agent.kwargs()
        )
        if stream:
            chunks = list(response)
            response = litellm.stream_chunk_builder(chunks, messages=agent.messages)
        agent.take(response.choices[0].message, step)


async def run_async(agent: Agent, litellm: Any, steps: int, stream: bool) -> None:
    for step in range(steps):
        if agent.needs_condensing():
            forgotten, recent = agent.split()
            response = await litellm.acompletion(
                messages=agent.condenser_messages(forgotten),
                **agent.kwargs(),
                **agent.condenser_kwargs(),
            )
            agent.condense_with(response.choices[0].message.content, recent)
        response = await litellm.acompletion(
            messages=list(agent.messages), tools=TOOLS, stream=stream, **agent.kwargs()
        )
        if stream:
            chunks = [chunk async for chunk in response]
            response = litellm.stream_chunk_builder(chunks, messages=agent.messages)
        agent.take(response.choices[0].message, step)


def run_responses(litellm: Any, model: str, base: str, steps: int) -> list[Any]:
    """A short chat through ``litellm.responses`` (stateless input lists)."""
    items: list[Any] = [{"role": "user", "content": TASK}]
    results = []
    for step in range(steps):
        response = litellm.responses(
            model=model, input=list(items), instructions=SYSTEM, api_base=base, api_key="k"
        )
        text = response.output_text if hasattr(response, "output_text") else None
        results.append({"text": text, "usage": response.usage.input_tokens})
        items += [{"role": "assistant", "content": text or ""}]
        items += [{"role": "user", "content": f"Continue with step {step + 1}."}]
    return results


def break_everything() -> None:
    """Fault injection: every reading of ours raises (the host must not notice)."""
    from otel_compaction.instrument.litellm import _read

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault")

    _read.LiteLLMApi.request = boom  # type: ignore[method-assign]
    _read.LiteLLMApi.response = boom  # type: ignore[method-assign]


def settle() -> None:
    """Wait (at most 60 s) for LiteLLM's logging pool to report the calls still in flight."""
    from otel_compaction.instrument.litellm import _handler

    callback = _handler.installed() if "litellm" in sys.modules else None
    deadline = time.monotonic() + 60
    while callback is not None and len(callback.observer) and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> None:
    opts = options()
    telemetry = Telemetry(bool(opts.get("instrument", True)))
    if opts.get("fault"):
        break_everything()
    import litellm

    if opts.get("otel_callback"):  # LiteLLM's own OpenTelemetry logger, on the same provider
        from opentelemetry import trace

        trace.set_tracer_provider(telemetry.tracer_provider)
        litellm.callbacks.append("otel")

    provider = opts.get("provider", "anthropic")
    model = "anthropic/claude-sonnet-4-5" if provider == "anthropic" else "openai/gpt-4o"
    api = FakeLLMAPI(script)
    steps = int(opts.get("steps", 16))
    with api.serve() as base:
        base = base if provider == "anthropic" else base + "/v1"
        if opts.get("api") == "responses":
            results: Any = run_responses(litellm, "openai/gpt-4o", base, steps)
            condensations = 0
        else:
            agent = Agent(model, base, opts)
            if opts.get("mode") == "async":
                asyncio.run(run_async(agent, litellm, steps, bool(opts.get("stream"))))
            else:
                run_sync(agent, litellm, steps, bool(opts.get("stream")))
            results, condensations = agent.results, agent.condensations
    litellm_callbacks = len(getattr(litellm, "success_callback", []))
    settle()
    errors = telemetry.errors()
    if telemetry.instrumented:
        telemetry.instrumentor.uninstrument()
    report(
        spans=telemetry.spans(),
        results=results,
        condensations=condensations,
        requests=len(api.requests),
        errors=errors,
        callbacks_while_on=litellm_callbacks,
        callbacks_after=len(getattr(litellm, "success_callback", [])),
    )


if __name__ == "__main__":
    main()
