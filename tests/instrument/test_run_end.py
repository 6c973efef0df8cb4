"""The end of the instrumentation is the end of every run: what only that decides is judged."""

from __future__ import annotations

from typing import Any

import pytest

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor, conversation, record_compaction
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.instrument.conftest import MODEL, anthropic_client, attrs

TASK = {"role": "user", "content": "Migrate the billing schema."}
READ = Reply("", tool_calls=(ToolCall("read_file", {"path": "schema.sql"}),))


def _run(turns_after: int) -> None:
    """An agent that compacts after 10 calls, with room left, then makes more calls."""
    client = anthropic_client(FakeLLMAPI(default=READ))
    messages: list[Any] = [TASK]
    with conversation("run-1"):
        for _ in range(10):
            message = client.messages.create(model=MODEL, max_tokens=64, messages=messages)
            messages += [
                {"role": "assistant", "content": message.content},
                {"role": "user", "content": "ok " * 50},
            ]
        record_compaction(summary="Goal: migrate", tokens_before=3_000, trigger="schedule")
        messages = [TASK, {"role": "user", "content": "Goal: migrate"}]
        for _ in range(turns_after):
            client.messages.create(model=MODEL, max_tokens=64, messages=messages)


@pytest.mark.parametrize(("turns_after", "flagged"), [(4, True), (25, False)])
def test_a_short_run_is_judged_when_the_instrumentation_ends(
    turns_after: int, flagged: bool, cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Nothing while the agent runs; at uninstrument() a run that ended at turn 14 is told
    its compaction at turn 11 was a short run's (a finding span linked to the compaction,
    and the listener), a run that went on to turn 35 is not."""
    _run(turns_after)
    assert not [f for f in cap.findings if f.kind is sc.FindingKind.SHORT_RUN_COMPACTION]
    instrumented.uninstrument()
    short = [f for f in cap.findings if f.kind is sc.FindingKind.SHORT_RUN_COMPACTION]
    spans = [attrs(s) for s in cap.spans_named(sc.SPAN_FINDING)]
    if not flagged:
        assert short == []
        assert spans == []
        return
    (finding,) = short
    assert finding.turn == 11
    assert "of a run that ended at turn 14" in finding.reason
    (span,) = spans
    assert span[sc.FINDING_KIND] == "short_run_compaction"
