"""The instrumentor: entry point, optional dependencies, exact uninstrument, foreign spans."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.instrumentation.dependencies import DependencyConflictError
from opentelemetry.trace import SpanKind

from otel_compaction import semconv as sc
from otel_compaction._once import Once
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI
from tests.instrument.conftest import MODEL, anthropic_client, attrs, chat_spans, openai_client

_PLACES = {
    "messages": ("anthropic.resources.messages.messages", "anthropic.resources.messages"),
    "beta": ("anthropic.resources.beta.messages.messages", "anthropic.resources.beta.messages"),
    "chat": ("openai.resources.chat.completions.completions", "openai.resources.chat.completions"),
    "responses": ("openai.resources.responses.responses",),
}
_METHODS = [
    ("messages", "Messages", "create"),
    ("messages", "AsyncMessages", "create"),
    ("messages", "Messages", "stream"),
    ("messages", "AsyncMessages", "stream"),
    ("beta", "Messages", "create"),
    ("beta", "AsyncMessages", "create"),
    ("beta", "Messages", "stream"),
    ("beta", "AsyncMessages", "stream"),
    ("chat", "Completions", "create"),
    ("chat", "AsyncCompletions", "create"),
    ("responses", "Responses", "create"),
    ("responses", "AsyncResponses", "create"),
    ("responses", "Responses", "compact"),
    ("responses", "AsyncResponses", "compact"),
]


def _targets() -> list[tuple[Any, str]]:
    """Every wrapped (owner, name) that the installed SDK releases have."""
    found: list[tuple[Any, str]] = []
    for place, cls, name in _METHODS:
        for module_name in _PLACES[place]:
            try:
                owner = getattr(importlib.import_module(module_name), cls, None)
            except ImportError:
                continue
            if owner is not None and name in owner.__dict__:
                found.append((owner, name))
                break
    base = importlib.import_module("anthropic._base_client")
    if hasattr(base, "start_api_call_span"):
        found.append((base, "start_api_call_span"))
    return found


TARGETS = _targets()


def test_entry_point_names_the_instrumentor() -> None:
    """opentelemetry-instrument finds us under the `opentelemetry_instrumentor` group."""
    points = importlib.metadata.entry_points(group="opentelemetry_instrumentor")
    (point,) = [p for p in points if p.name == "compaction"]
    assert point.load() is CompactionInstrumentor


def test_either_sdk_is_enough(
    monkeypatch: pytest.MonkeyPatch, instrument: Callable[..., CompactionInstrumentor]
) -> None:
    """Dependencies are any-of: a missing SDK is no conflict while the other is installed;
    with none of them, instrument() refuses as it does under opentelemetry-instrument."""
    strict = {"raise_exception_on_conflict": True}  # what opentelemetry-instrument passes
    instrumentor = instrument(**strict)
    assert instrumentor.is_instrumented_by_opentelemetry
    instrumentor.uninstrument()
    monkeypatch.setattr(
        CompactionInstrumentor,
        "instrumentation_dependencies",
        lambda self: ("anthropic >= 0.40", "no-such-sdk-xyz >= 1"),
    )
    assert instrument(**strict).is_instrumented_by_opentelemetry
    instrumentor.uninstrument()
    monkeypatch.setattr(
        CompactionInstrumentor,
        "instrumentation_dependencies",
        lambda self: ("no-such-sdk-xyz >= 1",),
    )
    with pytest.raises(DependencyConflictError, match="no-such-sdk-xyz"):
        instrument(**strict)
    assert not instrumentor.is_instrumented_by_opentelemetry


def test_current_releases_have_every_target() -> None:
    """anthropic 2.x and openai 3.x have all fourteen methods and the SDK span factory."""
    import anthropic
    import openai

    if int(anthropic.__version__.split(".")[0]) >= 2 and int(openai.__version__.split(".")[0]) >= 3:
        assert len(TARGETS) == 15
    assert TARGETS


def test_uninstrument_restores_every_method_exactly(
    cap: Capture, instrument: Callable[..., CompactionInstrumentor]
) -> None:
    """After uninstrument() each wrapped attribute is the original again, and calls are bare."""
    originals = [owner.__dict__[name] for owner, name in TARGETS]
    instrumentor = instrument()
    assert all(
        owner.__dict__[name] is not original
        for (owner, name), original in zip(TARGETS, originals, strict=True)
    )
    instrumentor.uninstrument()
    assert all(
        owner.__dict__[name] is original
        for (owner, name), original in zip(TARGETS, originals, strict=True)
    )
    anthropic_client(FakeLLMAPI()).messages.create(
        model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    assert cap.spans == ()


def test_instrument_again_after_uninstrument_starts_afresh(
    cap: Capture, instrument: Callable[..., CompactionInstrumentor]
) -> None:
    """A second instrument() after uninstrument() works, with fresh conversation state."""
    instrument().uninstrument()
    instrument()
    openai_client(FakeLLMAPI()).chat.completions.create(
        model="gpt-5.4", messages=[{"role": "user", "content": "x"}]
    )
    assert attrs(chat_spans(cap)[0])[sc.TURN_INDEX] == 1


def test_foreign_llm_span_is_enriched_not_duplicated(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Inside another instrumentation's open LLM span, we add compaction attributes to it."""
    tracer = cap.tracer_provider.get_tracer("opentelemetry.instrumentation.anthropic")
    with tracer.start_as_current_span(
        "anthropic.chat", kind=SpanKind.CLIENT, attributes={"llm.request.type": "chat"}
    ):
        anthropic_client(FakeLLMAPI()).messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    (span,) = cap.spans
    a = attrs(span)
    assert span.name == "anthropic.chat"
    assert a[sc.TURN_INDEX] == 1
    assert sc.CONVERSATION_ID in a
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in a  # theirs to set
    assert cap.metric_points(sc.METRIC_TOKEN_USAGE.name) == []  # theirs to record


def test_a_framework_agent_span_is_a_parent_not_enriched(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """An invoke_agent span is no inference span: our chat span nests under it."""
    tracer = cap.tracer_provider.get_tracer("framework")
    attributes = {sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT}
    with tracer.start_as_current_span("invoke_agent", attributes=attributes) as agent:
        anthropic_client(FakeLLMAPI()).messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    (chat,) = chat_spans(cap)
    assert chat.parent is not None
    assert chat.parent.span_id == agent.get_span_context().span_id


def test_suppressed_instrumentation_context_is_honoured(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Under OTel's suppress-instrumentation key the call runs bare."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    with suppress_instrumentation():
        anthropic_client(FakeLLMAPI()).messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    assert cap.spans == ()


def test_tracer_and_meter_carry_the_semconv_schema_url(
    instrumented: CompactionInstrumentor, cap: Capture
) -> None:
    """Our spans' and metrics' instrumentation scope names the semantic-conventions schema."""
    anthropic_client(FakeLLMAPI()).messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    (span,) = chat_spans(cap)
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.schema_url == sc.SCHEMA_URL
    data = cap.metric_reader.get_metrics_data()
    assert data is not None
    scopes = {s.scope.name: s.schema_url for rm in data.resource_metrics for s in rm.scope_metrics}
    assert scopes["otel_compaction"] == sc.SCHEMA_URL


def test_instrument_without_an_sdk_warns_once_saying_what_to_add(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With only the API's placeholder providers, instrument() warns once per process."""
    from opentelemetry import metrics, trace

    from otel_compaction.instrument import _instrumentor

    monkeypatch.setattr(_instrumentor, "_warned", Once())
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setattr(metrics, "get_meter_provider", metrics.NoOpMeterProvider)
    caplog.set_level("WARNING", logger="otel_compaction.instrument")
    instrumentor = CompactionInstrumentor()
    for _ in range(2):
        instrumentor.instrument(settings=Settings())
        instrumentor.uninstrument()
    warnings = [r.getMessage() for r in caplog.records if "no OpenTelemetry SDK" in r.getMessage()]
    assert len(warnings) == 1
    assert "tracer provider or meter provider" in warnings[0]
    assert "opentelemetry-instrument" in warnings[0]
    assert "tracer_provider=" in warnings[0]


def test_instrument_with_providers_does_not_warn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, cap: Capture
) -> None:
    """Providers given to instrument() are an SDK: no warning, whatever the globals are."""
    from opentelemetry import trace

    from otel_compaction.instrument import _instrumentor

    monkeypatch.setattr(_instrumentor, "_warned", Once())
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    caplog.set_level("WARNING", logger="otel_compaction.instrument")
    instrumentor = CompactionInstrumentor()
    instrumentor.instrument(
        tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider, settings=Settings()
    )
    instrumentor.uninstrument()
    assert not [r for r in caplog.records if "no OpenTelemetry SDK" in r.getMessage()]
