"""`opentelemetry-instrument python agent.py`: no code change, spans arrive at an OTLP receiver."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_compaction import semconv as sc
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.otlp_http import AGENT, AGENT_MODEL, OtlpHttpReceiver, attributes

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[OtlpHttpReceiver]:
    """An OTLP/HTTP receiver running for the test."""
    with OtlpHttpReceiver() as otlp:
        yield otlp


def test_agent_under_opentelemetry_instrument_exports_our_spans(
    tmp_path: Path, receiver: OtlpHttpReceiver
) -> None:
    """The unmodified script's calls arrive as our chat spans and one compaction span, over OTLP."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    api = FakeLLMAPI(default=Reply("", tool_calls=(ToolCall("read_file", {"path": "a.py"}),)))
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(
        OTEL_SERVICE_NAME="agent",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
        NO_PROXY="127.0.0.1",
        ANTHROPIC_API_KEY="sk-ant-subprocess",
    )
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    with api.serve() as base_url:
        done = subprocess.run(
            [str(instrument), sys.executable, str(script)],
            env={**env, "ANTHROPIC_BASE_URL": base_url},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    spans = receiver.spans()
    names = [span.name for span in spans]
    assert names.count(f"chat {AGENT_MODEL}") == 6
    assert names.count(sc.SPAN_COMPACTION) == 1
    assert "anthropic.messages.create" not in names  # the SDK's own span is suppressed
    chats = [attributes(s) for s in spans if s.name.startswith("chat")]
    assert sorted(a[sc.TURN_INDEX] for a in chats) == [1, 2, 3, 4, 5, 6]
    assert len({a[sc.CONVERSATION_ID] for a in chats}) == 1
    assert "sk-ant-subprocess" not in repr(spans)
