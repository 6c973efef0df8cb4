"""ClearToolUsesEdit's cleared tool results become prune compactions, once per clearing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from otel_compaction import semconv as sc
from otel_compaction.instrument.langchain import CompactionCallbackHandler
from otel_compaction.testing import Capture
from tests.attributes import attr_int
from tests.langchain._agents import ScriptedAgentModel, read_file, run


def _clearing_turns(inputs: Sequence[Sequence[BaseMessage]]) -> list[int]:
    """Ground truth: 1-based calls whose input shows a tool result cleared for the first time."""
    cleared: set[str] = set()
    turns = []
    for index, messages in enumerate(inputs, start=1):
        fresh = {
            m.tool_call_id
            for m in messages
            if isinstance(m, ToolMessage)
            and m.response_metadata.get("context_editing", {}).get("cleared")
            and m.tool_call_id not in cleared
        }
        if fresh:
            turns.append(index)
            cleared |= fresh
    return turns


def _agent(model: ScriptedAgentModel) -> Any:
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=400, keep=1)])
    return create_agent(
        model, tools=[read_file], middleware=[editing], checkpointer=InMemorySaver()
    )


def test_each_clearing_is_one_prune_compaction(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A result cleared in every later call is one prune, on the call that first shows it."""
    model = ScriptedAgentModel(turns=8)
    run(_agent(model))

    expected = _clearing_turns(model.inputs)
    assert len(expected) >= 3
    prunes = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert [p[sc.TURN_INDEX] for p in prunes] == expected
    assert {p[sc.COMPACTION_MODE] for p in prunes} == {"prune"}
    assert {p[sc.COMPACTION_TRIGGER] for p in prunes} == {"clear_tool_uses"}
    assert {p[sc.COMPACTION_SOURCE] for p in prunes} == {"langchain"}
    assert {p[sc.LINEAGE_GENERATION] for p in prunes} == {0}
    assert all(
        attr_int(p, sc.TOKENS_BEFORE) > attr_int(p, sc.TOKENS_AFTER_REPORTED) for p in prunes
    )


def test_cleared_results_are_not_new_content(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """New content per turn stays one tool result even when older results are being cleared."""
    model = ScriptedAgentModel(turns=8)
    run(_agent(model))

    chats = [dict(s.attributes or {}) for s in cap.spans if s.name.startswith("chat")]
    later = {attr_int(c, sc.CONTEXT_NEW_CONTENT_TOKENS) for c in chats[1:]}
    assert len(later) == 1
    assert later.pop() > 0
