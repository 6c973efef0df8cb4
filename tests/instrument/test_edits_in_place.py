"""Tool results shortened by mutating the same dicts between calls: a prune, and the
context size follows it."""

from __future__ import annotations

from typing import Any

import anthropic

from otel_compaction import semconv as sc
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from tests.instrument.conftest import MODEL, attrs, chat_spans, reading_client

SYSTEM = "You are a debugging agent."


def _run(client: anthropic.Anthropic, messages: list[Any], turns: int) -> None:
    for _ in range(turns):
        message = client.messages.create(
            model=MODEL, max_tokens=256, system=SYSTEM, messages=messages
        )
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": "row " * 400}
                    for u in uses
                ],
            }
        )


def _results(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        b
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
    ]


def test_tool_results_cleared_in_place_are_a_prune(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    messages: list[Any] = [{"role": "user", "content": "The test fails; find out why."}]
    client = reading_client()
    _run(client, messages, 5)
    for block in _results(messages)[:3]:
        block["content"] = "[cleared]"  # the same dicts the previous requests held
    _run(client, messages, 2)
    spans = [attrs(s) for s in chat_spans(cap)]
    (compaction,) = [attrs(s) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert compaction[sc.COMPACTION_MODE] == "prune"
    assert compaction[sc.COMPACTION_TRIGGER] == "tool_outputs_cleared"
    assert compaction[sc.TURN_INDEX] == 6
    assert compaction[sc.TOKENS_BEFORE] > compaction[sc.TOKENS_AFTER]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert spans[5][sc.CONTEXT_TOKENS] < spans[4][sc.CONTEXT_TOKENS]


def test_a_plain_extension_is_not_read_again_as_a_prune(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    messages: list[Any] = [{"role": "user", "content": "The test fails; find out why."}]
    _run(reading_client(), messages, 7)
    assert cap.spans_named(sc.SPAN_COMPACTION) == []


def test_a_tool_result_made_longer_in_place_is_no_compaction(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    messages: list[Any] = [{"role": "user", "content": "The test fails; find out why."}]
    client = reading_client()
    _run(client, messages, 4)
    _results(messages)[0]["content"] = "row " * 800
    _run(client, messages, 2)
    assert cap.spans_named(sc.SPAN_COMPACTION) == []
