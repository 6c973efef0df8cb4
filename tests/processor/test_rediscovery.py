"""The processor measures rediscovery from the agent's spans, as the agent measured it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor, conversation, record_compaction
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.testing import capture_telemetry
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import MODEL, anthropic_client
from tests.processor.conftest import make_config, queued

RESULT = "x" * 4000


def tool(path: str) -> Reply:
    """A reply that asks to read ``path``."""
    return Reply("", tool_calls=(ToolCall("read_file", {"path": path}),))


def agent_spans() -> tuple[list[Any], list[dict[str, Any]]]:
    """A scripted agent that reads a.py and b.py, compacts, reads them again: its spans and
    the rediscovery spans' attributes it emitted in process."""
    replies = [tool("a.py"), tool("b.py"), tool("a.py"), tool("b.py"), Reply("d"), Reply("e")]
    client = anthropic_client(FakeLLMAPI(replies))
    with capture_telemetry() as cap:
        instrumentor = CompactionInstrumentor()
        instrumentor.instrument(
            tracer_provider=cap.tracer_provider,
            meter_provider=cap.meter_provider,
            settings=Settings(rediscovery_horizon=3),
        )
        try:
            messages: list[Any] = [{"role": "user", "content": "Fix the billing test."}]
            with conversation("billing-2"):
                for step in range(len(replies)):
                    if step == 2:
                        record_compaction(summary="goal: fix it", tokens_before=9000)
                        messages = [*messages[:1], {"role": "user", "content": "goal: fix it"}]
                    reply = client.messages.create(model=MODEL, max_tokens=64, messages=messages)
                    messages.append({"role": "assistant", "content": reply.content})
                    results = [
                        {"type": "tool_result", "tool_use_id": b.id, "content": RESULT}
                        for b in reply.content
                        if b.type == "tool_use"
                    ]
                    messages.append({"role": "user", "content": results or "go on"})
        finally:
            instrumentor.uninstrument()
        spans = list(cap.spans)
    ours = [dict(s.attributes or {}) for s in spans if s.name == sc.SPAN_REDISCOVERY]
    return spans, ours


def test_the_processor_measures_what_the_agent_measured(tmp_path: Path) -> None:
    """Fed the agent's spans (its own rediscovery span among them, which is no turn), the tap
    pipeline emits one rediscovery span with the same figures."""
    spans, (agent,) = agent_spans()
    assert agent[sc.REDISCOVERY_CALLS] == 2
    config = make_config(tmp_path, "tap", detectors={"rediscovery_horizon": 3})
    assert config.forward.queue.directory is not None
    pipeline = Pipeline(config, queue=PersistentQueue(config.forward.queue.directory))
    pipeline.submit(Signal.TRACES, encode_spans(spans), "grpc")  # the agent's own included
    pipeline.step()
    pipeline.drain()
    emitted = [
        {kv.key: kv.value for kv in span.attributes}
        for request in queued(pipeline)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
        if span.name == sc.SPAN_REDISCOVERY
    ]
    (processor,) = emitted
    for key in (
        sc.REDISCOVERY_CALLS,
        sc.REDISCOVERY_TOKENS,
        sc.REDISCOVERY_TURNS,
        sc.REDISCOVERY_HORIZON_TURNS,
    ):
        assert processor[key].int_value == agent[key], key
    assert processor[sc.COMPACTION_ID].string_value == agent[sc.COMPACTION_ID]
