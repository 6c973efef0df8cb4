"""``CompactionInstrumentor``: wraps the anthropic and openai clients, and unwraps them
(and registers LiteLLM's callback and LangChain's handler once those are imported).

Every target is optional: a missing SDK, or an SDK release without one of the
methods, is skipped, so the instrumentor works with either SDK (or both) and
across their releases. ``uninstrument()`` restores each method exactly.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Collection
from typing import Any

import wrapt
from opentelemetry import metrics, trace
from opentelemetry.instrumentation.dependencies import DependencyConflict, get_dependency_conflicts
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap

from otel_compaction._once import Once
from otel_compaction.config import Settings
from otel_compaction.instrument import _runtime, frameworks
from otel_compaction.instrument._anthropic import AnthropicMessages
from otel_compaction.instrument._api import ProviderApi
from otel_compaction.instrument._managers import stream_manager_wrapper
from otel_compaction.instrument._openai import OpenAIChat, OpenAICompact, OpenAIResponses
from otel_compaction.instrument._runtime import Runtime, logger
from otel_compaction.instrument._spans import close_rediscovery, emit_settled
from otel_compaction.instrument._wrappers import (
    Wrapper,
    async_create_wrapper,
    create_wrapper,
    suppress_sdk_span_wrapper,
)
from otel_compaction.semconv import ErrorStage

_ANTHROPIC_MODULES = (
    "anthropic.resources.messages.messages",
    "anthropic.resources.messages",
    "anthropic.resources.beta.messages.messages",
    "anthropic.resources.beta.messages",
)
_CHAT_MODULES = (
    "openai.resources.chat.completions.completions",
    "openai.resources.chat.completions",
)
_RESPONSES_MODULES = ("openai.resources.responses.responses",)

Factory = Callable[[Runtime, ProviderApi], Wrapper]


def _targets() -> list[tuple[tuple[str, ...], str, str, Factory, ProviderApi]]:
    """(modules, class, method, wrapper factory, extraction) for every wrapped method."""
    anthropic, chat = AnthropicMessages(), OpenAIChat()
    responses, compact = OpenAIResponses(), OpenAICompact()
    plain_msgs, beta_msgs = _ANTHROPIC_MODULES[:2], _ANTHROPIC_MODULES[2:]
    return [
        (plain_msgs, "Messages", "create", create_wrapper, anthropic),
        (plain_msgs, "AsyncMessages", "create", async_create_wrapper, anthropic),
        (plain_msgs, "Messages", "stream", stream_manager_wrapper, anthropic),
        (plain_msgs, "AsyncMessages", "stream", stream_manager_wrapper, anthropic),
        (beta_msgs, "Messages", "create", create_wrapper, anthropic),
        (beta_msgs, "AsyncMessages", "create", async_create_wrapper, anthropic),
        (beta_msgs, "Messages", "stream", stream_manager_wrapper, anthropic),
        (beta_msgs, "AsyncMessages", "stream", stream_manager_wrapper, anthropic),
        (_CHAT_MODULES, "Completions", "create", create_wrapper, chat),
        (_CHAT_MODULES, "AsyncCompletions", "create", async_create_wrapper, chat),
        (_RESPONSES_MODULES, "Responses", "create", create_wrapper, responses),
        (_RESPONSES_MODULES, "AsyncResponses", "create", async_create_wrapper, responses),
        (_RESPONSES_MODULES, "Responses", "compact", create_wrapper, compact),
        (_RESPONSES_MODULES, "AsyncResponses", "compact", async_create_wrapper, compact),
    ]


def _find_class(modules: tuple[str, ...], name: str) -> Any:
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            return cls
    return None


class CompactionInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Compaction-aware GenAI instrumentation of the anthropic and openai clients, and of
    LiteLLM, aider and LangChain once the application imports them.

    ``instrument()`` accepts, besides the usual ``tracer_provider`` and
    ``meter_provider``: ``settings`` (a :class:`~otel_compaction.Settings`;
    default ``Settings.from_env()``) and ``on_finding`` (called with each
    :class:`~otel_compaction.Finding` as the detectors raise it, in the thread
    of the LLM call, so an agent can react).
    """

    _wrapped: tuple[tuple[Any, str], ...] = ()

    def instrumentation_dependencies(self) -> Collection[str]:
        """Either SDK is enough; each is wrapped when it is installed."""
        return ("anthropic >= 0.40", "openai >= 1.40")

    def _check_dependency_conflicts(self) -> DependencyConflict | None:
        return get_dependency_conflicts((), deps_any=self.instrumentation_dependencies())

    @property
    def runtime(self) -> Runtime | None:
        """The live runtime (registry, settings, telemetry) while instrumented."""
        return _runtime.current()

    def _instrument(self, **kwargs: Any) -> None:
        settings = kwargs.get("settings") or Settings.from_env()
        warn_without_sdk(kwargs.get("tracer_provider"), kwargs.get("meter_provider"))
        runtime = Runtime(
            settings,
            tracer_provider=kwargs.get("tracer_provider"),
            meter_provider=kwargs.get("meter_provider"),
            on_finding=kwargs.get("on_finding"),
        )
        runtime.closers.append(close_rediscovery)
        runtime.emit_ended = functools.partial(emit_settled, runtime)
        _runtime.install(runtime)
        wrapped: list[tuple[Any, str]] = []
        for modules, class_name, method, factory, api in _targets():
            cls = _find_class(modules, class_name)
            if cls is None or not callable(getattr(cls, method, None)):
                continue
            wrapt.wrap_function_wrapper(cls, method, factory(runtime, api))
            wrapped.append((cls, method))
        if settings.anthropic_sdk_span == "suppress":
            wrapped.extend(_suppress_sdk_span())
        self._wrapped = tuple(wrapped)
        with runtime.guard.stage(ErrorStage.CONTEXT):
            # LangChain's handler, LiteLLM's callback and aider's hooks join the same runtime
            # once the app imports langchain_core, litellm or aider.
            from otel_compaction.instrument import langchain, litellm

            langchain.install_when_imported(runtime)
            # pydantic-ai's and strands' summarization hooks, once the app imports them.
            frameworks.install_when_imported()
            litellm.install_when_imported(runtime)
        logger.debug("otel-compaction: instrumented %d methods", len(wrapped))

    def _uninstrument(self, **kwargs: Any) -> None:
        for owner, name in reversed(self._wrapped):
            unwrap(owner, name)
        self._wrapped = ()
        runtime = _runtime.current()
        with (runtime.guard if runtime is not None else _runtime.guard()).stage(ErrorStage.CONTEXT):
            from otel_compaction.instrument import langchain, litellm

            langchain.uninstall()
            frameworks.uninstall()
            litellm.uninstall()
        _runtime.uninstall()


NO_SDK_WARNING = (
    "otel-compaction: instrument() found no OpenTelemetry SDK %s: until one is set, our %s "
    "go nowhere. Run the agent under `opentelemetry-instrument` (it configures the SDK from "
    "OTEL_* environment variables), set the global providers before instrument() as in the "
    "README's in-code example, or pass tracer_provider= and meter_provider= to instrument()"
)
_warned = Once()


def warn_without_sdk(tracer_provider: Any, meter_provider: Any) -> None:
    """Say once per process what to add when neither an argument nor the globals give an SDK.

    The API's own providers (proxy and no-op) are what an unconfigured process has; spans and
    metrics made on them are dropped until the application sets real ones.
    """
    missing = []
    if tracer_provider is None and _is_api_default(trace.get_tracer_provider()):
        missing.append(("tracer provider", "spans"))
    if meter_provider is None and _is_api_default(metrics.get_meter_provider()):
        missing.append(("meter provider", "metrics"))
    if not missing or not _warned.claim():
        return
    what = " or ".join(name for name, _ in missing)
    signals = " and ".join(signal for _, signal in missing)
    logger.warning(NO_SDK_WARNING, what, signals)


def _is_api_default(provider: object) -> bool:
    """Whether ``provider`` is one of the API package's placeholders, not an SDK's."""
    module = type(provider).__module__
    return module.startswith(("opentelemetry.trace", "opentelemetry.metrics"))


def _suppress_sdk_span() -> list[tuple[Any, str]]:
    """Wrap anthropic's per-call span factory (anthropic >= 1.14), when it exists."""
    try:
        module = importlib.import_module("anthropic._base_client")
    except ImportError:
        return []
    if not callable(getattr(module, "start_api_call_span", None)):
        return []
    wrapt.wrap_function_wrapper(module, "start_api_call_span", suppress_sdk_span_wrapper)
    return [(module, "start_api_call_span")]
