"""A scripted compacting agent run under another instrumentation (in its own venv).

Run as ``python driver.py CONFIG_JSON`` with a framework interpreter
(``tests.frameworks.venvs``): it configures the OpenTelemetry SDK with an
in-memory exporter, turns on the instrumentation named in the config, runs the
agent against the fake model server at ``base_url``, and writes every span as
one OTLP ``ExportTraceServiceRequest`` (protobuf, encoded by the OTLP exporter's
own encoder) to ``out``. It imports nothing of otel-compaction: the agent knows
nothing of it, as in a fleet.

The agent compacts the common way: when the last call's input reached
``trigger`` tokens it asks the model, with no tools and a summarizer's system
prompt, for a summary of the history, and goes on from the task and that
summary. Variants change the agent, not the processor: ``stuck`` has a system
prompt above the trigger; ``prune`` clears old tool outputs instead of
summarizing; ``new_task`` starts a second task in the same trace; ``two_agents``
interleaves two agents, each under its own span, in one trace.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

MODEL = "agent-model"
SUMMARIZER_SYSTEM = "You are a summarizer. You write short, faithful summaries of work so far."
TOOL = {
    "name": "read_file",
    "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def words(seed: int, count: int) -> str:
    """Deterministic text of ``count`` pseudo-words, different per seed."""
    return " ".join(f"w{(seed * 7919 + i * 104729) % 99991:05d}" for i in range(count))


def instrument(name: str, provider: TracerProvider) -> None:
    """Turn on the instrumentation ``name`` with ``provider``."""
    if name == "genai_official":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif name == "openllmetry_openai":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LLMetryOpenAI

        LLMetryOpenAI().instrument(tracer_provider=provider)
    elif name == "openllmetry_anthropic":
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

        AnthropicInstrumentor().instrument(tracer_provider=provider)
    elif name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

        OIOpenAI().instrument(tracer_provider=provider)
    elif name == "litellm":
        import litellm

        litellm.callbacks = ["otel"]  # its own OTel callback, on the global tracer provider
        litellm.turn_off_message_logging = os.environ.get("TRACELOOP_TRACE_CONTENT") == "false"
    elif name != "anthropic_sdk":
        raise SystemExit(f"unknown instrumentation {name}")


class Model:
    """One API flavour: a call with a system prompt, messages and tools (or none)."""

    def __init__(self, api: str, base_url: str, config: dict[str, Any]) -> None:
        self.api = api
        self.base_url = base_url
        self.client: Any = None
        if api == "litellm":
            pass  # litellm.completion, no client
        elif api == "anthropic":
            import anthropic

            options: dict[str, Any] = {}
            if config["instrumentation"] != "anthropic_sdk" and not config.get("sdk_spans"):
                options["traces"] = {"enabled": False}
            else:
                content = "content" if config["capture"] else "metadata_only"
                options["traces"] = {"enabled": True, "content_mode": content}
            if config.get("conversation_id"):
                options["conversation_id"] = config["conversation_id"]
            opened: Any = options  # the SDK's TypedDict, built field by field
            self.client = anthropic.Anthropic(
                api_key="test", base_url=base_url, open_telemetry=opened
            )
        else:
            import openai

            self.client = openai.OpenAI(api_key="test", base_url=base_url + "/v1")

    calls = 0
    """Model calls made by this process (all models)."""

    def call(self, system: str, messages: list[dict[str, Any]], tools: bool) -> tuple[int, Any]:
        """The input tokens the call reported and its reply."""
        Model.calls += 1
        if self.api == "anthropic":
            kwargs: dict[str, Any] = {"tools": [_anthropic_tool()]} if tools else {}
            reply = self.client.messages.create(
                model=MODEL, system=system, messages=messages, max_tokens=512, **kwargs
            )
            usage = reply.usage
            size = usage.input_tokens + (usage.cache_read_input_tokens or 0)
            return size + (usage.cache_creation_input_tokens or 0), reply
        kwargs = {"tools": [{"type": "function", "function": TOOL}]} if tools else {}
        sent = [{"role": "system", "content": system}, *messages]
        if self.api == "litellm":
            import litellm

            reply = litellm.completion(
                model="openai/" + MODEL,
                api_base=self.base_url + "/v1",
                api_key="test",
                messages=sent,
                **kwargs,
            )
        else:
            reply = self.client.chat.completions.create(model=MODEL, messages=sent, **kwargs)
        return reply.usage.prompt_tokens, reply

    def tool_turn(self, reply: Any, output: str) -> list[dict[str, Any]]:
        """The assistant's tool call and the tool's output, as the next messages."""
        if self.api == "anthropic":
            use = next(b for b in reply.content if b.type == "tool_use")
            return [
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": output}],
                },
            ]
        call = reply.choices[0].message.tool_calls[0]
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": output},
        ]

    def text(self, reply: Any) -> str:
        """The reply's text."""
        if self.api == "anthropic":
            return "".join(b.text for b in reply.content if b.type == "text")
        return str(reply.choices[0].message.content or "")


def _anthropic_tool() -> dict[str, Any]:
    return {
        "name": TOOL["name"],
        "description": TOOL["description"],
        "input_schema": TOOL["parameters"],
    }


class Agent:
    """The scripted agent: tool calls until the trigger, then a summary (or a prune)."""

    def __init__(self, model: Model, config: dict[str, Any], seed: int, task: int = 0) -> None:
        self.model = model
        self.config = config
        self.seed = seed
        self.system = f"You are coding agent {seed}. Use the tools to finish the task."
        if config["variant"] == "stuck":
            self.system += " " + words(seed + 500, config["stuck_system_words"])
        task = task or seed
        self.task = {"role": "user", "content": f"Task {task}: " + words(task, 40)}
        self.history: list[dict[str, Any]] = [self.task]
        self.step = 0

    def run_step(self) -> None:
        """One agent call, and a compaction after it when its input reached the trigger."""
        self.step += 1
        size, reply = self.model.call(self.system, self.history, tools=True)
        output = words(self.seed * 1000 + self.step, self.config["tool_words"])
        self.history += self.model.tool_turn(reply, output)
        if size < self.config["trigger"]:
            return
        if self.config["variant"] == "prune":
            self.prune()
        else:
            self.compact()

    def compact(self) -> None:
        """Ask for a summary (no tools, the summarizer's prompt) and restart from it."""
        transcript = json.dumps(self.history)
        ask = {"role": "user", "content": "Summarize the conversation so far:\n" + transcript}
        _, reply = self.model.call(SUMMARIZER_SYSTEM, [ask], tools=False)
        summary = {"role": "user", "content": "Summary of earlier work: " + self.model.text(reply)}
        self.history = [self.task, summary]
        if self.model.api == "anthropic":  # the Messages API wants alternating roles
            self.history = [
                {"role": "user", "content": self.task["content"] + "\n\n" + summary["content"]}
            ]

    def prune(self) -> None:
        """Clear the oldest ``prune_share`` of the tool outputs in place (the calls stay)."""
        results = [m for m in self.history if _is_tool_result(m)]
        for message in results[: int(len(results) * self.config["prune_share"])]:
            if isinstance(message["content"], list):
                message["content"][0]["content"] = "[cleared]"
            else:
                message["content"] = "[cleared]"


def _is_tool_result(message: dict[str, Any]) -> bool:
    if message["role"] == "tool":
        return True
    content = message.get("content")
    return isinstance(content, list) and content[0].get("type") == "tool_result"


def run(config: dict[str, Any], tracer: trace.Tracer) -> None:
    """The configured run: one agent, two interleaved, or two tasks one after the other."""
    model = Model(config["api"], config["base_url"], config)
    variant = config["variant"]
    steps = config["steps"]
    if variant == "two_agents":
        agents = [Agent(model, config, 1), Agent(model, config, 2)]
        spans = [tracer.start_span(f"agent {a.seed}") for a in agents]
        for _ in range(steps):
            for agent, span in zip(agents, spans, strict=True):
                with trace.use_span(span, end_on_exit=False):
                    agent.run_step()
        for span in spans:
            span.end()
        return
    agent = Agent(model, config, 1)
    for _ in range(steps):
        agent.run_step()
    if variant == "new_task":  # the same agent (system prompt), another task
        agent = Agent(model, config, 1, task=2)
        for _ in range(steps):
            agent.run_step()


def main() -> None:
    """Run the agent as configured and write its spans."""
    config = json.loads(sys.argv[1])
    if config["capture"] and config.get("semconv_latest", True):
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    if config["capture"]:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "false"
    else:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    exporter = InMemorySpanExporter()
    resource = Resource.create({"service.name": config.get("service", "scripted-agent")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if config.get("otlp_endpoint"):  # also to a processor, over OTLP/HTTP, in batches
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        otlp = OTLPSpanExporter(endpoint=config["otlp_endpoint"])
        provider.add_span_processor(BatchSpanProcessor(otlp, max_export_batch_size=16))
    trace.set_tracer_provider(provider)
    instrument(config["instrumentation"], provider)
    tracer = provider.get_tracer("scripted-agent")
    if config.get("session_id"):  # OpenInference's session key, on every span in the block
        from openinference.instrumentation import using_session

        with using_session(config["session_id"]):
            _traced(config, tracer)
    else:
        _traced(config, tracer)
    if config["instrumentation"] == "litellm":
        _wait_for_litellm(exporter, Model.calls)
    provider.force_flush()
    request = encode_spans(exporter.get_finished_spans())
    with open(config["out"], "wb") as out:
        out.write(request.SerializeToString())
    provider.shutdown()


def _wait_for_litellm(exporter: InMemorySpanExporter, calls: int) -> None:
    """LiteLLM logs each call from a thread of its own: wait (bounded) until every call's
    span is in, then a little more for what it writes on spans it did not open."""
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        scope = [s for s in exporter.get_finished_spans() if _by_litellm(s)]
        raw = sum(1 for s in scope if s.name == "raw_gen_ai_request")
        if max(raw, len(scope) - raw) >= calls:
            break  # a span per call (its own, or the raw request's under the caller's span)
        if not scope and time.monotonic() > deadline - 19:
            break  # it writes on the caller's span only: nothing of its own to wait for
        time.sleep(0.05)
    time.sleep(0.3)


def _by_litellm(span: Any) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == "litellm"


def _traced(config: dict[str, Any], tracer: trace.Tracer) -> None:
    if config.get("root_span", True):
        with tracer.start_as_current_span("agent run"):
            run(config, tracer)
    else:
        run(config, tracer)


if __name__ == "__main__":
    main()
