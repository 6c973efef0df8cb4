"""What a demo scenario is: a scripted run, its agents, and the findings it must produce.

:class:`ScenarioContext` gives a scenario's script its agents: each with a real
SDK client on the demo's LLM server, its own scripted model, and its own
``invoke_agent`` span, so every call of one agent lands in one trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from opentelemetry.trace import Span, Tracer

from otel_compaction import semconv as sc
from otel_compaction.demo.agent import ToolAgent
from otel_compaction.demo.backends import AnthropicBackend, Backend, OpenAIChatBackend
from otel_compaction.demo.plan import ScriptedModel
from otel_compaction.demo.server import DemoLLMServer
from otel_compaction.demo.workspace import Workspace
from otel_compaction.semconv import FindingKind

ANTHROPIC_MODEL = "claude-sonnet-5-5"
OPENAI_MODEL = "gpt-5.4"
DEMO_WINDOW = 32_000
"""The context window the demo gives its models (``Settings.model_windows``): small, so
each run fills it in a few dozen turns and the whole demo takes seconds."""
DEMO_WINDOWS: Mapping[str, int] = {ANTHROPIC_MODEL: DEMO_WINDOW, OPENAI_MODEL: DEMO_WINDOW}


@dataclass(frozen=True, slots=True)
class Expectation:
    """What one agent's conversation must produce: exactly these findings (kind, turn)."""

    agent: str
    findings: tuple[tuple[FindingKind, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scripted run of one or more agents, with its expected findings.

    Args:
        name: the ``--scenario`` name.
        title: one line on what it shows.
        conversation: how its conversation ids come about (given, inferred).
        expected: the findings per agent.
        run: drives the agents (given the scenario's context).
    """

    name: str
    title: str
    conversation: str
    expected: tuple[Expectation, ...]
    run: Callable[[ScenarioContext], None]


@dataclass
class ScenarioContext:
    """What a scenario's script needs: agents with clients on the demo server, spans.

    Args:
        scenario: the scenario's name (prefix of its agents' names).
        server: the local LLM API, serving.
        tracer: for the agents' ``invoke_agent`` spans.
    """

    scenario: str
    server: DemoLLMServer
    tracer: Tracer
    spans: dict[str, Span] = field(default_factory=dict)

    def agent(
        self,
        name: str,
        model: ScriptedModel,
        *,
        provider: str,
        system: str,
        task: str,
        sizes: Mapping[str, int],
        server_compaction: bool = False,
    ) -> ToolAgent:
        """A new agent named ``<scenario>/<name>`` whose requests ``model`` answers."""
        agent_id = f"{self.scenario}/{name}"
        self.server.register(agent_id, model.reply)
        backend: Backend
        if provider == sc.PROVIDER_ANTHROPIC:
            backend = AnthropicBackend(
                self.server.anthropic_client(agent_id),
                ANTHROPIC_MODEL,
                server_compaction=server_compaction,
            )
        else:
            backend = OpenAIChatBackend(self.server.openai_client(agent_id), OPENAI_MODEL)
        span = self.tracer.start_span(
            f"{sc.OPERATION_INVOKE_AGENT} {agent_id}",
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: agent_id,
                sc.GEN_AI_PROVIDER_NAME: provider,
            },
        )
        self.spans[agent_id] = span
        workspace = Workspace(sizes, label=agent_id)
        return ToolAgent(agent_id, backend, workspace, system=system, task=task, span=span)

    def close(self) -> None:
        """End the agents' spans."""
        for span in self.spans.values():
            span.end()
