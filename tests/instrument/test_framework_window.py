"""A framework's own configured window is the one its calls' pressure is read against."""

from __future__ import annotations

import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.instrument._framework import FrameworkCall, enter_call, exit_call
from otel_compaction.signals.windows import context_window
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply
from tests.instrument.conftest import MODEL, anthropic_client, attrs, chat_spans


def _call_in(window: int | None, cap: Capture) -> dict[str, object]:
    """One real anthropic call made inside a framework call configured with ``window``."""
    client = anthropic_client(FakeLLMAPI([Reply("ok", input_tokens=4_000)]))
    call = FrameworkCall("framework-run", id_given=True, framework="strands", window=window)
    token = enter_call(call)
    try:
        client.messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}]
        )
    finally:
        exit_call(call, token)
    (span,) = chat_spans(cap)
    return attrs(span)


def test_a_framework_window_is_the_window_of_its_calls(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A call made in a framework configured with a 10,000-token window (strands'
    ``context_window_limit``) reads 4,000 tokens as 0.4 of it, not of the model's 200k."""
    a = _call_in(10_000, cap)
    assert a[sc.CONTEXT_WINDOW] == 10_000
    assert a[sc.PRESSURE_TOKEN_FRACTION] == pytest.approx(0.4)


@pytest.mark.parametrize("window", [None, 0, -5])
def test_without_a_usable_framework_window_the_model_window_holds(
    window: int | None, cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """No window, or a nonsensical one, leaves the model's window from the table."""
    a = _call_in(window, cap)
    model_window = context_window(MODEL, Settings())
    assert a[sc.CONTEXT_WINDOW] == model_window
    assert a[sc.PRESSURE_TOKEN_FRACTION] == pytest.approx(4_000 / model_window)
