"""`opentelemetry-instrument python agent.py`: no code change, spans arrive at an OTLP receiver."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_compaction import semconv as sc
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall

pytestmark = pytest.mark.slow

AGENT = textwrap.dedent(
    """
    import sys
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-subprocess", base_url=sys.argv[1], max_retries=0)
    messages = [{"role": "user", "content": "Find the bug."}]
    for turn in range(6):
        if turn == 4:
            messages = [messages[0], {"role": "user", "content": "Summary so far."}, *messages[-2:]]
        reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=messages)
        messages.append({"role": "assistant", "content": reply.content})
        uses = [b for b in reply.content if b.type == "tool_use"]
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": "ok " * 50} for u in uses
        ]
        messages.append({"role": "user", "content": results or "next"})
    """
)


class OtlpReceiver:
    """A tiny OTLP/HTTP receiver on 127.0.0.1: keeps the spans of every POST /v1/traces."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            receiver.spans.extend(scope.spans)
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    """An OTLP/HTTP receiver running for the test."""
    otlp = OtlpReceiver()
    otlp.thread.start()
    yield otlp
    otlp.server.shutdown()
    otlp.server.server_close()


def _attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = (
            getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None
        )
    return out


def test_agent_under_opentelemetry_instrument_exports_our_spans(
    tmp_path: Path, receiver: OtlpReceiver
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
    )
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    with api.serve() as base_url:
        done = subprocess.run(
            [str(instrument), sys.executable, str(script), base_url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    names = [span.name for span in receiver.spans]
    assert names.count("chat claude-sonnet-5-5") == 6
    assert names.count(sc.SPAN_COMPACTION) == 1
    assert "anthropic.messages.create" not in names  # the SDK's own span is suppressed
    chats = [_attributes(s) for s in receiver.spans if s.name.startswith("chat")]
    assert sorted(a[sc.TURN_INDEX] for a in chats) == [1, 2, 3, 4, 5, 6]
    assert len({a[sc.CONVERSATION_ID] for a in chats}) == 1
    assert "sk-ant-subprocess" not in repr(receiver.spans)
