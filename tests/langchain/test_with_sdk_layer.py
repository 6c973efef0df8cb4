"""ChatAnthropic on an instrumented anthropic client: one span per call, each compaction once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.instrument.langchain import install, uninstall
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.langchain._agents import run, summarizing_agent

chat_models = pytest.importorskip("langchain_anthropic", reason="langchain-anthropic not installed")

pytestmark = pytest.mark.slow  # a local HTTP server stands in for the Anthropic API

AGENT_TURNS = 16


class _Script:
    """Tool calls until ``AGENT_TURNS`` agent calls, then an answer; summaries on request."""

    def __init__(self) -> None:
        self.agent_calls = 0
        self.summaries = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        last = str(request.body.get("messages", [{}])[-1].get("content", ""))
        if "Context Extraction Assistant" in last:
            self.summaries += 1
            return Reply(f"summary {self.summaries}: goal fix the bug; plan read files.")
        self.agent_calls += 1
        if self.agent_calls > AGENT_TURNS:
            return Reply("done")
        path = {"path": f"f{self.agent_calls}.py"}
        return Reply("", tool_calls=(ToolCall("read_file", path, f"toolu_{self.agent_calls}"),))


@pytest.fixture
def instrumented(cap: Capture) -> Iterator[CompactionInstrumentor]:
    """The SDK layer and the LangChain handler, on one runtime."""
    instrumentor = CompactionInstrumentor()
    instrumentor.instrument(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    install(runtime=instrumentor.runtime)
    yield instrumentor
    uninstall()
    instrumentor.uninstrument()


def test_summarizing_chat_anthropic_agent_is_recorded_once(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Every API call has one inference span; each summarization is one langchain compaction."""
    script = _Script()
    api = FakeLLMAPI(script)
    with api.serve() as base_url:
        model: Any = chat_models.ChatAnthropic(
            model="claude-sonnet-5", api_key="test", base_url=base_url, max_retries=0
        )
        run(summarizing_agent(model, model, trigger_tokens=800))

    chats = [s for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]
    assert len(chats) == len(api.requests)
    compactions = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert script.summaries >= 3
    assert len(compactions) == script.summaries
    assert {c[sc.COMPACTION_SOURCE] for c in compactions} == {"langchain"}
    assert [c[sc.LINEAGE_GENERATION] for c in compactions] == list(range(script.summaries))
    turns = [dict(s.attributes or {}).get(sc.TURN_INDEX) for s in chats]
    assert [t for t in turns if t is not None] == list(range(1, script.agent_calls + 1))
    assert {dict(s.attributes or {})[sc.CONVERSATION_ID] for s in chats} == {"thread-1"}
