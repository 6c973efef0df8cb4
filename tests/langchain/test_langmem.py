"""langmem's running summary: each extension is a compaction continuing the lineage."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from typing_extensions import TypedDict

from otel_compaction import semconv as sc
from otel_compaction.instrument.langchain import CompactionCallbackHandler
from otel_compaction.testing import Capture

short_term = pytest.importorskip("langmem.short_term", reason="langmem is an optional extra")


class State(MessagesState):
    context: dict[str, Any]


class ModelInput(TypedDict):
    summarized_messages: list[AnyMessage]
    context: dict[str, Any]


def _graph(model: FakeMessagesListChatModel, summarizer: FakeMessagesListChatModel) -> Any:
    node = short_term.SummarizationNode(
        token_counter=count_tokens_approximately,
        model=summarizer,
        max_tokens=400,
        max_tokens_before_summary=300,
        max_summary_tokens=100,
    )

    def call_model(state: ModelInput) -> dict[str, Any]:
        return {"messages": [model.invoke(state["summarized_messages"])]}

    builder = StateGraph(State)
    builder.add_node("call_model", call_model)
    builder.add_node("summarize", node)
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", "call_model")
    return builder.compile(checkpointer=InMemorySaver())


def test_running_summary_extensions_continue_the_lineage(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Each new RunningSummary is one compaction; extending it makes generations 0, 1, 2."""
    model = FakeMessagesListChatModel(responses=[AIMessage(content="answer " + "blah " * 60)])
    summaries = [AIMessage(content=f"running summary {k}: goal, plan") for k in range(5)]
    summarizer = FakeMessagesListChatModel(responses=summaries)
    graph = _graph(model, summarizer)
    for index in range(16):
        question = HumanMessage(f"question {index} " + "word " * 40)
        graph.invoke({"messages": [question]}, {"configurable": {"thread_id": "lm"}})

    compactions = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert summarizer.i == len(compactions) == 3
    assert [c[sc.LINEAGE_GENERATION] for c in compactions] == [0, 1, 2]
    assert {c[sc.COMPACTION_TRIGGER] for c in compactions} == {"running_summary"}
    chats = [dict(s.attributes or {}) for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]
    assert [c[sc.TURN_INDEX] for c in chats] == list(range(1, 17))  # summarizer calls excluded
    compacted = [c[sc.TURN_INDEX] for c in chats if c.get(sc.GEN_AI_CONVERSATION_COMPACTED)]
    assert compacted == [c[sc.TURN_INDEX] for c in compactions]
