"""Running the scripted agent under a real instrumentation, and reading what it exported."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_compaction.config import Settings
from otel_compaction.model import Finding
from otel_compaction.otlp.decode import Signal, parse_protobuf
from otel_compaction.otlp.extract import span_items
from otel_compaction.otlp.state import ConversationState
from otel_compaction.testing.llm_api import (
    FakeLLMAPI,
    RecordedRequest,
    Reply,
    ToolCall,
    estimate_tokens,
)
from tests.frameworks.venvs import framework_python, run_env

DRIVER = Path(__file__).resolve().parent / "driver.py"
WINDOW = 20_000
"""The scripted model's window (``agent-model``), given to the processor's settings."""
TRIGGER = 14_000
"""The agent compacts once a call's input reached this many tokens (0.7 of the window)."""


def words(seed: int, count: int) -> str:
    """The driver's deterministic pseudo-words (the same function)."""
    return " ".join(f"w{(seed * 7919 + i * 104729) % 99991:05d}" for i in range(count))


SCHEMA = (
    "Goal: finish the task.\nPlan: read the remaining files.\n"
    "Decisions: keep the module layout.\nOpen errors: none.\nNext action: read src/app.py.\n"
)
"""The head of every summary: the preserve-schema's fields (docs/concepts.md)."""


@dataclass
class Server:
    """The fake model's script: tool calls for the agent, summaries for the summarizer.

    ``growing``: each summary carries the previous one whole and adds
    ``growth`` words (the livelock variant: every compaction leaves more behind).
    """

    growing: bool = False
    growth: int = 1_800
    cache_share: float = 0.0
    summaries: list[str] = field(default_factory=list)
    agent_calls: int = 0
    compacted_at: list[int] = field(default_factory=list)
    """How many agent calls had been made when each summary was asked for."""

    def reply(self, request: RecordedRequest) -> Reply:
        """The reply to one request (``cache_share`` of an agent call's input read from cache)."""
        if request.body.get("tools"):
            self.agent_calls += 1
            cached = int(estimate_tokens(request.body) * self.cache_share)
            call = ToolCall("read_file", {"path": "src/app.py"})
            return Reply(text="", tool_calls=(call,), cache_read_tokens=cached)
        seed = len(self.summaries) + 1
        self.compacted_at.append(self.agent_calls)
        if self.growing and self.summaries:
            text = self.summaries[-1] + "\n" + words(seed * 31, self.growth)
        else:
            text = SCHEMA + words(seed * 31, self.growth if self.growing else 60)
        self.summaries.append(text)
        return Reply(text=text)


def run_agent(
    instrumentation: str,
    venv: str,
    tmp: Path,
    *,
    api: str = "openai",
    variant: str = "healthy",
    capture: bool = False,
    steps: int = 40,
    root_span: bool = True,
    growing: bool = False,
    cache_share: float = 0.0,
    extra: dict[str, Any] | None = None,
    server: Server | None = None,
) -> tuple[bytes, Server]:
    """Run the driver under ``instrumentation`` (in ``venv``); the OTLP request it wrote
    (``server``: another script for the fake model than ``Server``'s)."""
    server = server or Server(growing=growing, cache_share=cache_share)
    api_fake = FakeLLMAPI(server.reply)
    out = tmp / f"{instrumentation}-{variant}-{int(capture)}.pb"
    python = framework_python(venv)
    with api_fake.serve() as base_url:
        config = {
            "instrumentation": instrumentation,
            "api": api,
            "base_url": base_url,
            "variant": variant,
            "capture": capture,
            "steps": steps,
            "root_span": root_span,
            "trigger": TRIGGER,
            "tool_words": 550,
            "stuck_system_words": 8_200,
            "prune_share": 1 / 3,
            "out": str(out),
            **(extra or {}),
        }
        subprocess.run(
            [str(python), str(DRIVER), json.dumps(config)],
            env=run_env(),
            check=True,
            timeout=300,
            capture_output=True,
        )
    return out.read_bytes(), server


def attributes(data: bytes) -> Iterator[dict[str, Any]]:
    """Each span's name and attributes (for looking at a dialect)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest.FromString(data)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield {"name": span.name, "scope": ss.scope.name, **MessageToDict(span)}


@dataclass
class Verdict:
    """What the processor's reading and engine made of one exported run."""

    conversations: set[str] = field(default_factory=set)
    turns: int = 0
    compactions: list[tuple[str, int, str]] = field(default_factory=list)
    """(conversation, turn index before it, evidence) of each compaction."""
    findings: list[Finding] = field(default_factory=list)
    generations: list[int] = field(default_factory=list)
    """Each compaction's lineage generation (0: it starts a lineage)."""


def settings() -> Settings:
    """The processor's settings for the scripted model (its window known)."""
    return Settings(model_windows={"agent-model": WINDOW})


def judge(data: bytes) -> Verdict:
    """Feed one OTLP trace request through the processor's reading and engine."""
    request = parse_protobuf(Signal.TRACES, data)
    state = ConversationState(settings(), window=0.0)
    state.offer(span_items(request, settings().model_windows, targets=False))
    verdict = Verdict()
    for applied in state.drain():
        verdict.conversations.add(applied.item.conversation_id)
        if applied.turn is not None:
            verdict.turns += 1
            if applied.turn.settled is not None:
                verdict.findings += applied.turn.settled.findings
        if applied.compaction is not None:
            record = applied.compaction.record
            verdict.compactions.append(
                (record.conversation_id, record.turn_index, record.trigger or "")
            )
            verdict.generations.append(record.generation)
            verdict.findings += applied.compaction.findings
            if applied.compaction.settled is not None:
                verdict.findings += applied.compaction.settled.findings
    for analyzer, _, _ in state.tracked():
        finished = analyzer.finish()
        if finished is not None:
            verdict.findings += finished.findings
    return verdict
