"""A conversation resumed by a new agent process is followed, not discarded.

Each agent process is the real anthropic SDK under our instrumentation, against the scripted
LLM API, exporting over OTLP/HTTP to the processor run as a service (its CLI). The second
process resumes the same conversation id and numbers its turns from 1 again; the processor
restarts in between and again before a third process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
import yaml

from otel_compaction.processor.snapshot import SnapshotStore
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply
from tests.hostile.inputs import counter
from tests.processor.conftest import make_config
from tests.processor.downstream import free_port
from tests.processor.service_util import ROOT, http_ready, start_process, wait_for

pytestmark = pytest.mark.slow

CONVERSATION = "ticket-resumed-1"
AGENT = textwrap.dedent(
    """
    import sys
    import anthropic
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from otel_compaction import CompactionInstrumentor, conversation

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1])))
    CompactionInstrumentor().instrument(tracer_provider=provider)
    client = anthropic.Anthropic()
    messages = [{"role": "user", "content": "Resume the ticket. " * int(sys.argv[3])}]
    with conversation(sys.argv[2]):
        for _ in range(4):
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                           messages=messages)
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": "next " * 200})
    provider.shutdown()
    """
)


def _agent(tmp_path: Path, api_url: str, port: int, words: int) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(ROOT), ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="sk-ant-x",
               NO_PROXY="127.0.0.1")  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    argv = [sys.executable, str(script), endpoint, CONVERSATION, str(words)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def _metrics(admin: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=10) as response:
        data: bytes = response.read()
        return data


def _turns(admin: int) -> float:
    return counter(_metrics(admin), "compaction_pressure_token_fraction_count")


def _late(admin: int) -> float:
    return counter(_metrics(admin), "compaction_processor_rejected_total",
                   compaction_processor_reason="late")  # fmt: skip


def test_turns_of_a_resumed_conversation_are_applied_across_agent_and_processor_restarts(
    tmp_path: Path,
) -> None:
    """Agent process 1 (turns 1-4), processor restart, agent process 2 (turns 1-4 again), agent
    process 3 (1-4 again), processor restart: all twelve turns applied, none late, and the
    snapshot carries the conversation at turn 12 with the last process's turns after 8."""
    http, admin = free_port(), free_port()
    config = tmp_path / "processor.yaml"
    config.write_text(yaml.safe_dump({
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{http}"},
        "metrics": {"endpoint": f"127.0.0.1:{admin}"},
        "output": {"log_findings": False},
        "processing": {"reorder_window_seconds": 0.05},
        "state": {"directory": str(tmp_path / "state")},
    }))  # fmt: skip
    api = FakeLLMAPI(default=Reply("Looking."))
    seen = []
    with api.serve() as api_url:
        for run, agents in (("first", [2000]), ("second", [3000, 4000])):
            process = start_process(config, run)
            try:
                assert wait_for(lambda: http_ready(admin), 30)
                for n, words in enumerate(agents, start=1):
                    _agent(tmp_path, api_url, http, words)
                    expected = 4.0 * n
                    assert wait_for(lambda: _turns(admin) >= expected)  # noqa: B023
                seen.append((_turns(admin), _late(admin)))
            finally:
                process.send_signal(signal.SIGTERM)
                assert process.wait(60) == 0, (tmp_path / f"{run}.err").read_text()
    entry = next(e for e in SnapshotStore(tmp_path / "state", make_config(tmp_path).settings())
                 .read().entries if e.conversation_id == CONVERSATION)  # fmt: skip
    assert seen == [(4.0, 0.0), (8.0, 0.0)]
    assert (entry.mark, entry.base) == (12, 8)
