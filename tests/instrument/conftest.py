"""Fixtures: in-memory telemetry, the instrumentor on it, and real SDK clients over the fake API."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture, capture_telemetry
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall

MODEL = "claude-sonnet-5-5"
OPENAI_MODEL = "gpt-5.4"
# anthropic 0.x gives Stream a metaclass whose isinstance() accepts the exact class only,
# so no proxy (nor subclass) passes it there; current releases use plain classes.
PROXY_ISINSTANCE = type(anthropic.Stream) is type
ANTHROPIC_KEY = "sk-ant-test-secret"
OPENAI_KEY = "sk-openai-test-secret"


@pytest.fixture
def cap() -> Iterator[Capture]:
    """Fresh tracer and meter providers with in-memory exporters."""
    with capture_telemetry() as capture:
        yield capture


@pytest.fixture
def settings() -> Settings:
    """Default settings, independent of the environment the tests run in."""
    return Settings()


@pytest.fixture
def instrument(cap: Capture, settings: Settings) -> Iterator[Callable[..., CompactionInstrumentor]]:
    """Instrument on ``cap`` (keyword arguments go to ``instrument()``); uninstrumented after."""
    instrumentor = CompactionInstrumentor()

    def start(**kwargs: Any) -> CompactionInstrumentor:
        options: dict[str, Any] = {
            "tracer_provider": cap.tracer_provider,
            "meter_provider": cap.meter_provider,
            "settings": settings,
            "on_finding": cap.on_finding,
        }
        options.update(kwargs)
        instrumentor.instrument(**options)
        return instrumentor

    yield start
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


@pytest.fixture
def instrumented(instrument: Callable[..., CompactionInstrumentor]) -> CompactionInstrumentor:
    """The instrumentor with default options."""
    return instrument()


def _has(module: str, *path: str) -> bool:
    """Whether the installed SDK release has ``module.path...`` (feature checks)."""
    try:
        value: Any = importlib.import_module(module)
    except ImportError:
        return False
    for name in path:
        if not hasattr(value, name):
            return False
        value = getattr(value, name)
    return True


def _accepts(module: str, cls: str, method: str, parameter: str) -> bool:
    if not _has(module, cls, method):
        return False
    function = getattr(getattr(importlib.import_module(module), cls), method)
    return parameter in inspect.signature(function).parameters


# Features of the SDK releases; the old end of the supported range lacks some.
SDK_SPAN = pytest.mark.skipif(
    not _has("anthropic._base_client", "start_api_call_span"),
    reason="anthropic < 1.14 has no built-in span and no open_telemetry option",
)
CONTEXT_MANAGEMENT = pytest.mark.skipif(
    not _accepts("anthropic.resources.beta.messages", "Messages", "create", "compaction"),
    reason="this anthropic release has no server-side compaction",
)
RESPONSES = pytest.mark.skipif(
    not _has("openai.resources.responses", "Responses"),
    reason="this openai release has no Responses API",
)
COMPACT = pytest.mark.skipif(
    not _has("openai.resources.responses", "Responses", "compact"),
    reason="this openai release has no responses.compact",
)
CHAT_STREAM_HELPER = pytest.mark.skipif(
    not _has("openai.resources.chat.completions", "Completions", "stream"),
    reason="this openai release has no chat.completions.stream()",
)


def http_module(sdk: ModuleType) -> ModuleType:
    """The HTTP library ``sdk`` is built on: ``httpx2`` (current releases) or ``httpx`` (older)."""
    base = importlib.import_module(sdk.__name__ + "._base_client")
    return httpx2 if hasattr(base, "httpx2") else httpx


def _http(sdk: ModuleType, api: FakeLLMAPI, *, asynchronous: bool = False) -> Any:
    module = http_module(sdk)
    client = module.AsyncClient if asynchronous else module.Client
    return client(transport=api.mock_transport(module.__name__))


def anthropic_client(api: FakeLLMAPI, **options: Any) -> anthropic.Anthropic:
    """A real anthropic client whose HTTP goes to ``api`` through a mock transport."""
    http = _http(anthropic, api)
    return anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=http, max_retries=0, **options)


def async_anthropic_client(api: FakeLLMAPI, **options: Any) -> anthropic.AsyncAnthropic:
    """A real async anthropic client over ``api``."""
    http = _http(anthropic, api, asynchronous=True)
    return anthropic.AsyncAnthropic(
        api_key=ANTHROPIC_KEY, http_client=http, max_retries=0, **options
    )


def openai_client(api: FakeLLMAPI, **options: Any) -> openai.OpenAI:
    """A real openai client over ``api``."""
    http = _http(openai, api)
    return openai.OpenAI(api_key=OPENAI_KEY, http_client=http, max_retries=0, **options)


def async_openai_client(api: FakeLLMAPI, **options: Any) -> openai.AsyncOpenAI:
    """A real async openai client over ``api``."""
    http = _http(openai, api, asynchronous=True)
    return openai.AsyncOpenAI(api_key=OPENAI_KEY, http_client=http, max_retries=0, **options)


def text_block(block: object) -> anthropic.types.TextBlock:
    """``block`` of a response's content, checked to be a text block."""
    assert isinstance(block, anthropic.types.TextBlock), block
    return block


def tool_use_block(block: object) -> anthropic.types.ToolUseBlock:
    """``block`` of a response's content, checked to be a tool call."""
    assert isinstance(block, anthropic.types.ToolUseBlock), block
    return block


def attrs(span: Any) -> dict[str, Any]:
    """A finished span's attributes as a plain dict."""
    return dict(span.attributes or {})


def chat_spans(cap: Capture) -> list[Any]:
    """Our inference spans, in the order they ended."""
    return [s for s in cap.spans if s.name.startswith("chat")]


def compaction_attrs(cap: Capture) -> list[dict[str, Any]]:
    """The attributes of every ``compaction`` span, in the order they ended."""
    return [attrs(s) for s in cap.spans_named(sc.SPAN_COMPACTION)]


def reading_client() -> anthropic.Anthropic:
    """The real anthropic client over a fake API whose every reply reads a file (a tool use)."""
    reads = Reply("", tool_calls=(ToolCall("read_file", {"path": "a.py"}),))
    return anthropic_client(FakeLLMAPI(default=reads))
