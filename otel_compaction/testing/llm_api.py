"""A scripted fake of the Anthropic Messages and OpenAI Chat Completions / Responses APIs.

It answers like the real HTTP APIs (JSON bodies, server-sent event streams, error
envelopes), so the real ``anthropic`` and ``openai`` SDKs can be driven through it
with no network. Replies come from a script: a sequence of :class:`Reply` (one per
request, in order) or a function of the :class:`RecordedRequest`. Usage is
estimated from what was sent (``estimate_tokens``: JSON characters / 4), so the
token counts grow with the history the way real ones do.

Server-side context management is simulated: Anthropic ``compaction`` blocks
(``context_management`` ``compact_20260112`` edits, the top-level
``compaction={"type": "summarize"}`` request, ``usage.iterations``),
``clear_tool_uses_20250919`` edits reported in ``context_management.applied_edits``,
and OpenAI Responses ``compaction`` output items (``context_management`` with a
``compact_threshold``, ``responses.compact``); a later request that sends the
compaction block or item back is billed only from it onward, as the real APIs do.

Two ways in::

    api = FakeLLMAPI([Reply(tool_calls=(ToolCall("read_file", {"path": "a.py"}),)), Reply("done")])
    http = httpx2.Client(transport=api.mock_transport())
    client = anthropic.Anthropic(api_key="test", http_client=http)

    with api.serve() as base_url:          # a real HTTP server on 127.0.0.1
        client = openai.OpenAI(api_key="test", base_url=base_url + "/v1")

``api.handler`` is a plain ``MockTransport`` handler for ``httpx2`` and ``httpx``
alike (older SDK releases use ``httpx``); ``api.requests`` records what arrived.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from otel_compaction.testing import _llm_anthropic, _llm_openai
from otel_compaction.testing._llm_wire import (
    RecordedRequest,
    Reply,
    ToolCall,
    WireResponse,
    error_response,
    estimate_tokens,
)

__all__ = [
    "FakeLLMAPI",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "WireResponse",
    "estimate_tokens",
]

Script = Iterable[Reply] | Callable[[RecordedRequest], Reply]

_ROUTES: Mapping[str, tuple[str, Callable[[RecordedRequest, Reply], WireResponse]]] = {
    "/v1/messages": ("anthropic", _llm_anthropic.messages),
    "/v1/chat/completions": ("openai_chat", _llm_openai.chat_completions),
    "/v1/responses": ("openai_responses", _llm_openai.responses),
    "/v1/responses/compact": ("openai_compact", _llm_openai.responses_compact),
    "/v1/messages/count_tokens": ("anthropic_count", _llm_anthropic.count_tokens),
}


@dataclass
class FakeLLMAPI:
    """The fake API: a script of replies, and a record of the requests it answered.

    Args:
        script: replies in order, one per request, or a function from the
            request to its reply. When a sequence runs out, ``default`` answers.
        default: the reply once the script is exhausted.
    """

    script: Script = ()
    default: Reply = field(default_factory=Reply)
    requests: list[RecordedRequest] = field(default_factory=list, init=False)
    _replies: Iterator[Reply] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.script):
            self._replies = iter(list(self.script))

    def respond(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> WireResponse:
        """Answer one HTTP request: route it, record it, and build the reply's wire form."""
        route = _ROUTES.get(_normalise_path(path))
        if method.upper() != "POST" or route is None:
            return error_response("openai", 404, f"no route for {method} {path}")
        api, build = route
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return error_response(api, 400, "request body is not JSON")
        request = RecordedRequest(
            api=api,
            path=path,
            headers={k.lower(): v for k, v in headers.items()},
            body=payload if isinstance(payload, dict) else {},
        )
        with self._lock:
            self.requests.append(request)
            reply = self._next_reply(request)
        if reply.timeout:
            return WireResponse(0, {}, b"", timeout=True)
        if reply.status != 200:
            return error_response(api, reply.status, reply.error_message, reply.retry_after)
        return build(request, reply)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if callable(self.script):
            return self.script(request)
        assert self._replies is not None
        return next(self._replies, self.default)

    def handler(self, request: Any) -> Any:
        """A ``MockTransport`` handler for ``httpx2`` and ``httpx`` requests.

        The response is built with the module the request came from, so the same
        fake serves current SDKs (``httpx2``) and older ones (``httpx``).
        """
        module = importlib.import_module(type(request).__module__.split(".")[0])
        wire = self.respond(
            request.method, request.url.raw_path.decode(), dict(request.headers), request.content
        )
        if wire.timeout:
            raise module.ReadTimeout("the fake API timed out", request=request)
        return module.Response(wire.status, headers=wire.headers, content=wire.body)

    def mock_transport(self, module: str = "httpx2") -> Any:
        """A ``MockTransport`` of ``module`` (``httpx2`` or ``httpx``) answering with this fake."""
        return importlib.import_module(module).MockTransport(self.handler)

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve the fake on 127.0.0.1 (a free port) for the block; yields the base URL."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="fake-llm-api", daemon=True)
        thread.start()
        try:
            host, port = server.server_address[:2]
            yield f"http://{host!s}:{port}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _normalise_path(path: str) -> str:
    """``/v1/messages?beta=true`` and a base URL without ``/v1`` route alike."""
    path = path.split("?", 1)[0].rstrip("/")
    return path if path.startswith("/v1/") else "/v1" + path


def _handler_class(api: FakeLLMAPI) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``api`` (http.server wants a class)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle on, the second waits
        # for the client's delayed ACK (~40 ms per call on Linux loopback).
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            wire = api.respond("POST", self.path, dict(self.headers.items()), body)
            if wire.timeout:
                self.close_connection = True
                return
            self.send_response(wire.status)
            for key, value in wire.headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(wire.body)))
            self.end_headers()
            self.wfile.write(wire.body)

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet: tests read ``api.requests`` instead."""

    return Handler
