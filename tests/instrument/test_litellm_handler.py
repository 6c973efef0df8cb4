"""LiteLLM in process (when the environment has it, as the test extra installs it): the
callback ``CompactionInstrumentor`` registers sees real ``litellm.completion`` calls on
both provider paths, reads LiteLLM's model table for the window, and leaves with
``uninstrument()``. The framework tests drive it further in its own environment.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map
litellm: Any = pytest.importorskip("litellm")

from otel_compaction import semconv as sc  # noqa: E402
from otel_compaction.config import Settings  # noqa: E402
from otel_compaction.instrument import CompactionInstrumentor  # noqa: E402
from otel_compaction.instrument.litellm import _handler  # noqa: E402
from otel_compaction.testing import Capture  # noqa: E402
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply  # noqa: E402

# LiteLLM's own types warn when pydantic builds their schemas (its code, not ours). Its
# async path leaves event loops of its own unclosed, which the suite's warnings-as-errors
# would report at its end: async calls are driven in LiteLLM's environment only
# (tests/frameworks/test_litellm.py).
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Go."}]


@pytest.fixture
def base_url() -> Iterator[str]:
    """A scripted API on loopback; LiteLLM's clients of it closed after the test."""
    with FakeLLMAPI(default=Reply("done", cache_read_tokens=4)).serve() as url:
        try:
            yield url
        finally:
            _close_litellm_clients()


def _close_litellm_clients() -> None:
    """LiteLLM keeps the HTTP clients it made for the process (``in_memory_llm_clients_cache``):
    close them, or their loopback connections stay open until the interpreter exits (and
    say so there, as unclosed sockets)."""
    cache = litellm.in_memory_llm_clients_cache
    for client in list(cache.cache_dict.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            close()
    cache.flush_cache()


def settle() -> None:
    """Wait for LiteLLM's logging pool to report the calls in flight (at most 60 s)."""
    callback = _handler.installed()
    deadline = time.monotonic() + 60
    while callback is not None and len(callback.observer) and time.monotonic() < deadline:
        time.sleep(0.01)


def chats(cap: Capture) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in cap.spans if s.name.startswith("chat")]


def test_both_provider_paths_are_one_span_each(
    cap: Capture, instrumented: CompactionInstrumentor, base_url: str
) -> None:
    """``anthropic/...`` (LiteLLM's own handler) and ``openai/...`` (the openai client's
    ``post``) calls are one span each, read against LiteLLM's model table's window."""
    litellm.completion(
        model="anthropic/claude-sonnet-4-5", messages=MESSAGES, api_base=base_url, api_key="k"
    )
    litellm.completion(
        model="openai/gpt-4o", messages=MESSAGES, api_base=base_url + "/v1", api_key="k"
    )
    settle()
    anthropic, openai = chats(cap)
    assert anthropic[sc.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert (
        anthropic[sc.CONTEXT_WINDOW]
        == litellm.get_model_info("anthropic/claude-sonnet-4-5")["max_input_tokens"]
    )
    assert anthropic[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 4
    assert openai[sc.GEN_AI_PROVIDER_NAME] == "openai"
    assert openai[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0


@pytest.mark.parametrize("settings", [Settings(model_windows={"gpt-4o": 50_000})])
def test_a_window_override_wins_over_litellm_table(
    cap: Capture, instrumented: CompactionInstrumentor, base_url: str
) -> None:
    """``OTEL_PYTHON_COMPACTION_MODEL_WINDOWS`` names the model: its window, not LiteLLM's."""
    litellm.completion(
        model="openai/gpt-4o", messages=MESSAGES, api_base=base_url + "/v1", api_key="k"
    )
    settle()
    (span,) = chats(cap)
    assert span[sc.CONTEXT_WINDOW] == 50_000


def test_uninstrument_takes_the_callback_out_of_every_list(
    cap: Capture, instrument: Any, base_url: str
) -> None:
    """After ``uninstrument()`` no LiteLLM list holds the callback and calls make no span."""
    instrumentor = instrument()
    callback = _handler.installed()
    assert callback is not None
    litellm.completion(
        model="openai/gpt-4o", messages=MESSAGES, api_base=base_url + "/v1", api_key="k"
    )
    settle()
    instrumentor.uninstrument()
    lists = [getattr(litellm, name, []) for name in _handler._CALLBACK_LISTS]
    assert all(callback not in found for found in lists)
    litellm.completion(
        model="openai/gpt-4o", messages=MESSAGES, api_base=base_url + "/v1", api_key="k"
    )
    assert len(chats(cap)) == 1


def test_litellm_own_otel_logger_writes_onto_our_span(
    cap: Capture, instrumented: CompactionInstrumentor, base_url: str
) -> None:
    """With LiteLLM's own OpenTelemetry logger registered too, calls are one span each: the
    logger's attributes land on ours, no ``litellm_request`` span opens."""
    from litellm.integrations.opentelemetry import OpenTelemetry

    logger = OpenTelemetry(tracer_provider=cap.tracer_provider)
    litellm.callbacks.append(logger)
    try:
        litellm.completion(
            model="openai/gpt-4o", messages=MESSAGES, api_base=base_url + "/v1", api_key="k"
        )
        litellm.completion(
            model="anthropic/claude-sonnet-4-5", messages=MESSAGES, api_base=base_url, api_key="k"
        )
        settle()
    finally:
        for name in _handler._CALLBACK_LISTS:
            found = getattr(litellm, name, None)
            if isinstance(found, list) and logger in found:
                found.remove(logger)
    assert cap.spans_named("litellm_request") == []
    spans = chats(cap)
    assert len(spans) == 2
    assert all("gen_ai.cost.total_cost" in s for s in spans)
