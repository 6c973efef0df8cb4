"""Anthropic compaction blocks in a ChatAnthropic-style response become server compactions."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from otel_compaction import semconv as sc
from otel_compaction.instrument.langchain import CompactionCallbackHandler
from otel_compaction.testing import Capture
from tests.attributes import attr_int

SUMMARY = "The user asked to fix the parser bug; goal: fix it; plan: patch tokenize()."


def _compacting(summary: str | None, text: str) -> AIMessage:
    """A response shaped like ChatAnthropic's after Anthropic compacted the context."""
    return AIMessage(
        content=[
            {"type": "compaction", "content": summary},
            {"type": "text", "text": text},
        ],
        response_metadata={"model_provider": "anthropic", "stop_reason": "end_turn"},
    )


def _chat(cap: Capture) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]


def test_compaction_block_is_a_server_compaction(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A compaction block is recorded as mode server on the call that returned it, once."""
    model = FakeMessagesListChatModel(
        responses=[_compacting(SUMMARY, "patched"), AIMessage(content="verified")]
    )
    history: list[Any] = [HumanMessage("fix the parser bug " + "context " * 400)]
    config: RunnableConfig = {"metadata": {"thread_id": "srv"}}
    first = model.invoke(history, config=config)
    history += [first, HumanMessage("now run the tests")]
    model.invoke(history, config=config)

    spans = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert len(spans) == 1
    span = spans[0]
    assert span[sc.COMPACTION_MODE] == "server"
    assert span[sc.COMPACTION_SOURCE] == "langchain"
    assert span[sc.TURN_INDEX] == 1
    assert attr_int(span, sc.TOKENS_BEFORE) > attr_int(span, sc.TOKENS_AFTER_REPORTED)
    assert sc.SUMMARY_FAILED not in span
    chats = _chat(cap)
    assert [c[sc.TURN_INDEX] for c in chats] == [1, 2]
    assert chats[0][sc.GEN_AI_CONVERSATION_COMPACTED] is True
    # The provider reads from the block on: the long first message no longer counts.
    assert chats[1][sc.CONTEXT_TOKENS] < span[sc.TOKENS_BEFORE]


def test_empty_compaction_block_is_a_failed_compaction(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A compaction block with ``content: null`` is recorded as a failed summary."""
    model = FakeMessagesListChatModel(responses=[_compacting(None, "oops")])
    model.invoke([HumanMessage("hello " * 100)], config={"metadata": {"thread_id": "fail"}})

    (span,) = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert span[sc.SUMMARY_FAILED] is True


def test_compacting_a_compacted_context_continues_the_lineage(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A second compaction block whose summary carries the first one's is its child."""
    second = SUMMARY + " Then: parser bug fixed in tokenize(); next: run the test suite."
    model = FakeMessagesListChatModel(
        responses=[_compacting(SUMMARY, "patched"), _compacting(second, "tests pass")]
    )
    history: list[Any] = [HumanMessage("fix the parser bug " + "context " * 400)]
    config: RunnableConfig = {"metadata": {"thread_id": "srv2"}}
    first = model.invoke(history, config=config)
    history += [first, HumanMessage("run the tests " + "log " * 400)]
    model.invoke(history, config=config)

    spans = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert [s[sc.LINEAGE_GENERATION] for s in spans] == [0, 1]
    assert spans[1][sc.LINEAGE_PARENT_ID] == spans[0][sc.COMPACTION_ID]
