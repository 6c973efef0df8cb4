"""Test helpers shared by the subprocess tests: a scripted agent and an OTLP/HTTP receiver."""

from __future__ import annotations

import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

AGENT_MODEL = "claude-sonnet-4-6"
AGENT = textwrap.dedent(
    f"""
    import anthropic

    client = anthropic.Anthropic()  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment
    messages = [{{"role": "user", "content": "Find the bug."}}]
    for turn in range(6):
        if turn == 4:
            summary = {{"role": "user", "content": "Summary so far."}}
            messages = [messages[0], summary, *messages[-2:]]
        reply = client.messages.create(model="{AGENT_MODEL}", max_tokens=64, messages=messages)
        messages.append({{"role": "assistant", "content": reply.content}})
        uses = [b for b in reply.content if b.type == "tool_use"]
        results = [
            {{"type": "tool_result", "tool_use_id": u.id, "content": "ok " * 50}} for u in uses
        ]
        messages.append({{"role": "user", "content": results or "next"}})
    """
)
"""An unmodified agent: six anthropic calls, the history rewritten before the fifth."""


class OtlpHttpReceiver:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps every request body by path (a context
    manager: serving inside the block)."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.bodies.append((self.path, body))
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

    def __enter__(self) -> OtlpHttpReceiver:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def endpoint(self) -> str:
        """The base URL (``/v1/traces`` and ``/v1/metrics`` below it)."""
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def spans(self) -> list[Any]:
        """Every span received on /v1/traces, in arrival order."""
        out: list[Any] = []
        for path, body in self.bodies:
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                out.extend(
                    s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
                )
        return out


def attributes(span: Any) -> dict[str, Any]:
    """A protobuf span's attributes as a dict."""
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out
