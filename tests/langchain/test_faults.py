"""The handler's own errors never reach LangChain: caught, logged once, counted."""

from __future__ import annotations

import logging

import pytest

from otel_compaction import semconv as sc
from otel_compaction.instrument._framework import current_call
from otel_compaction.instrument.langchain import CompactionCallbackHandler, _handler, _recognize
from otel_compaction.instrument.langchain._telemetry import LangChainTelemetry
from otel_compaction.testing import Capture
from tests.langchain._agents import GrowingSummarizer, ScriptedAgentModel, run, summarizing_agent


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected fault")


def test_fault_in_turn_analysis_does_not_break_the_agent(
    cap: Capture,
    handler: CompactionCallbackHandler,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Chat-model starts fail inside the handler: the agent finishes, one log line, all counted."""
    monkeypatch.setattr(_handler, "scan_input", _boom)
    model = ScriptedAgentModel(turns=5)
    with caplog.at_level(logging.DEBUG):
        result = run(summarizing_agent(model, GrowingSummarizer(), trigger_tokens=10**6))

    assert result["messages"][-1].content == "done"
    assert handler.errors == model.calls == 6
    stage = {sc.ERROR_STAGE: "callback"}
    assert cap.counter_total(sc.METRIC_INSTRUMENTATION_ERRORS.name, stage) == 6
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1
    assert errors[0].exc_info is None  # no traceback in the host
    assert "on_chat_model_start" in errors[0].getMessage()
    assert not [r for r in caplog.records if "Error in" in r.getMessage()]  # LangChain saw none
    assert current_call() is None


def test_fault_in_span_emission_does_not_break_the_agent(
    cap: Capture, handler: CompactionCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failing to emit compaction spans leaves the summarizing agent's result intact."""
    monkeypatch.setattr(LangChainTelemetry, "compaction", _boom)
    model = ScriptedAgentModel(turns=16)
    summarizer = GrowingSummarizer()
    result = run(summarizing_agent(model, summarizer, trigger_tokens=800))

    assert result["messages"][-1].content == "done"
    assert summarizer.count >= 3
    assert handler.errors == summarizer.count
    assert not cap.spans_named(sc.SPAN_COMPACTION)
    assert len([s for s in cap.spans if s.name.startswith("chat")]) == model.calls


def test_fault_in_the_scope_bookkeeping_leaves_no_scope_open(
    cap: Capture, handler: CompactionCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure before the call's scope opens leaves no framework scope behind."""
    monkeypatch.setattr(_recognize, "prune_observation", _boom)
    run(summarizing_agent(ScriptedAgentModel(turns=2), GrowingSummarizer(), trigger_tokens=10**6))
    assert handler.errors == 3
    assert current_call() is None
