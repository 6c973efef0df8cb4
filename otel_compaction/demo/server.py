"""The demo's LLM API: the project's fake of the Anthropic and OpenAI HTTP APIs, on 127.0.0.1.

One server answers every demo agent. Each agent's client sends its name in the
``x-demo-agent`` header, and the server hands the request to that agent's
:class:`~otel_compaction.demo.plan.ScriptedModel`, so agents can interleave
their calls freely. The clients are the real ``anthropic`` and ``openai`` SDKs,
talking HTTP to the server as they would to the real APIs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply

if TYPE_CHECKING:
    import anthropic
    import openai

AGENT_HEADER = "x-demo-agent"
API_KEY = "demo-key-not-a-secret"
TIMEOUT_SECONDS = 30.0

ModelFn = Callable[[RecordedRequest], Reply]


class DemoLLMServer:
    """A local LLM API routing each request to the scripted model of its agent.

    Use :meth:`serve` as a context manager; inside it, :meth:`anthropic_client`
    and :meth:`openai_client` give real SDK clients bound to one agent's model.
    """

    def __init__(self) -> None:
        self._models: dict[str, ModelFn] = {}
        self._lock = threading.Lock()
        self.api = FakeLLMAPI(self._route)
        self.base_url: str | None = None
        self.request_count = 0
        """Requests answered so far."""
        self._clients: list[Any] = []

    @contextlib.contextmanager
    def serve(self) -> Iterator[DemoLLMServer]:
        """Serve on 127.0.0.1 (a free port) for the block; clients are closed after it."""
        with self.api.serve() as base_url:
            self.base_url = base_url
            try:
                yield self
            finally:
                for client in self._clients:
                    client.close()
                self._clients.clear()
                self.base_url = None

    def register(self, agent: str, model: ModelFn) -> None:
        """Answer requests of ``agent`` with ``model``."""
        with self._lock:
            self._models[agent] = model

    def anthropic_client(self, agent: str) -> anthropic.Anthropic:
        """A real anthropic client of ``agent``."""
        import anthropic

        client = anthropic.Anthropic(
            api_key=API_KEY,
            base_url=self._url(),
            # The server is local: no proxy from the environment may stand in between.
            http_client=anthropic.DefaultHttpxClient(trust_env=False),
            max_retries=0,
            timeout=TIMEOUT_SECONDS,
            default_headers={AGENT_HEADER: agent},
        )
        self._clients.append(client)
        return client

    def openai_client(self, agent: str) -> openai.OpenAI:
        """A real openai client of ``agent``."""
        import openai

        client = openai.OpenAI(
            api_key=API_KEY,
            base_url=self._url() + "/v1",
            http_client=openai.DefaultHttpxClient(trust_env=False),
            max_retries=0,
            timeout=TIMEOUT_SECONDS,
            default_headers={AGENT_HEADER: agent},
        )
        self._clients.append(client)
        return client

    def forget_requests(self) -> None:
        """Drop the fake's record of the requests answered (call between runs: they are large)."""
        with self._lock:
            self.api.requests.clear()

    def _url(self) -> str:
        if self.base_url is None:
            raise RuntimeError("the demo LLM server is not serving")
        return self.base_url

    def _route(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.request_count += 1
            model = self._models.get(request.headers.get(AGENT_HEADER, ""))
        if model is None:
            return Reply(status=400, error_message=f"no demo agent named in {AGENT_HEADER}")
        return model(request)
