"""SummarizationMiddleware firings become compaction spans with lineage, per thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.instrument import conversation
from otel_compaction.instrument.langchain import CompactionCallbackHandler
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import CompactionSource, FindingKind
from otel_compaction.signals.tokens import estimate_tokens
from otel_compaction.testing import Capture
from tests.detectors.scenarios import settle
from tests.langchain._agents import GrowingSummarizer, ScriptedAgentModel, run, summarizing_agent


def _is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.additional_kwargs.get("lc_source") == (
        "summarization"
    )


def _summary_turns(inputs: Sequence[Sequence[BaseMessage]]) -> list[int]:
    """Ground truth: 1-based calls whose input starts with a summary not seen before."""
    turns, last = [], None
    for index, messages in enumerate(inputs, start=1):
        head = messages[0]
        if _is_summary(head) and head.content != last:
            turns.append(index)
            last = head.content
    return turns


def _compactions(cap: Capture) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_COMPACTION)]


def _chats(cap: Capture) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]


def test_three_summarizations_form_one_lineage(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Three firings give three compaction spans, generations 0, 1, 2, each linked to its parent."""
    model = ScriptedAgentModel(turns=16)
    summarizer = GrowingSummarizer()
    run(summarizing_agent(model, summarizer, trigger_tokens=800))

    compactions = _compactions(cap)
    assert summarizer.count == len(compactions) == 3
    assert [c[sc.LINEAGE_GENERATION] for c in compactions] == [0, 1, 2]
    ids = [c[sc.COMPACTION_ID] for c in compactions]
    assert [c.get(sc.LINEAGE_PARENT_ID) for c in compactions] == [None, ids[0], ids[1]]
    assert {c[sc.LINEAGE_ROOT_ID] for c in compactions} == {ids[0]}
    assert {c[sc.COMPACTION_SOURCE] for c in compactions} == {CompactionSource.LANGCHAIN.value}
    assert {c[sc.COMPACTION_MODE] for c in compactions} == {"lossy"}
    assert {c[sc.CONVERSATION_ID] for c in compactions} == {"thread-1"}
    assert all(c[sc.TOKENS_BEFORE] > c[sc.TOKENS_AFTER_REPORTED] for c in compactions)
    spans = cap.spans_named(sc.SPAN_COMPACTION)
    for child, parent in zip(spans[1:], spans[:-1], strict=True):
        assert [link.context.span_id for link in child.links] == [parent.context.span_id]


def test_turn_indices_match_the_calls_that_see_each_summary(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A compaction's turn is the first call holding its summary; summarizer calls are no turns."""
    model = ScriptedAgentModel(turns=16)
    run(summarizing_agent(model, GrowingSummarizer(), trigger_tokens=800))

    expected = _summary_turns(model.inputs)
    assert [c[sc.TURN_INDEX] for c in _compactions(cap)] == expected
    chats = _chats(cap)
    assert [c[sc.TURN_INDEX] for c in chats] == list(range(1, model.calls + 1))
    compacted = [c[sc.TURN_INDEX] for c in chats if c.get(sc.GEN_AI_CONVERSATION_COMPACTED)]
    assert compacted == expected


def test_thread_id_is_the_given_conversation_id(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Two threads of one agent are two conversations, each counting its own turns."""
    agent = summarizing_agent(
        ScriptedAgentModel(turns=0), GrowingSummarizer(), trigger_tokens=10**6
    )
    run(agent, thread_id="a")
    run(agent, thread_id="b")
    run(agent, thread_id="a")
    by_thread = [(c[sc.CONVERSATION_ID], c[sc.TURN_INDEX]) for c in _chats(cap)]
    assert by_thread == [("a", 1), ("b", 1), ("a", 2)]
    assert all(c[sc.GEN_AI_CONVERSATION_ID] == c[sc.CONVERSATION_ID] for c in _chats(cap))


def test_conversation_block_wins_over_the_thread(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Inside ``conversation(...)`` turns and compactions use that id, as the SDK layer does."""
    model = ScriptedAgentModel(turns=16)
    with conversation("ticket-9"):
        run(summarizing_agent(model, GrowingSummarizer(), trigger_tokens=800))
    spans = _chats(cap) + _compactions(cap)
    assert len(_compactions(cap)) >= 3
    assert {s[sc.CONVERSATION_ID] for s in spans} == {"ticket-9"}
    assert {c[sc.CONVERSATION_ID_SOURCE] for c in _chats(cap)} == {"explicit"}


def test_without_thread_the_run_is_an_inferred_conversation(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """A run without a thread gets an inferred id and no gen_ai.conversation.id."""
    agent = summarizing_agent(
        ScriptedAgentModel(turns=1), GrowingSummarizer(), trigger_tokens=10**6, checkpointer=False
    )
    run(agent, thread_id=None)
    chats = _chats(cap)
    assert len(chats) == 2
    assert len({c[sc.CONVERSATION_ID] for c in chats}) == 1
    assert all(sc.GEN_AI_CONVERSATION_ID not in c for c in chats)
    assert {c[sc.CONVERSATION_ID_SOURCE] for c in chats} == {"inferred"}


# --------------------------------------------------------------------------- #
# The livelock verdict equals the one of the same run observed at the SDK level.
# --------------------------------------------------------------------------- #


def _tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(estimate_tokens(m.text) for m in messages)


def _replay(inputs: Sequence[Sequence[BaseMessage]]) -> tuple[ConversationAnalyzer, list[Any]]:
    """Feed the engine what a plain SDK observer sees: each call's input, nothing else."""
    analyzer = ConversationAnalyzer("replay", Settings())
    analyses: list[Any] = []
    seen: set[str | None] = set()
    last, previous = None, None
    for messages in inputs:
        head = messages[0]
        if _is_summary(head) and head.content != last:
            before = _tokens(previous or []) + _tokens(messages[1:])
            obs = CompactionObservation(
                source=CompactionSource.EXPLICIT,
                tokens_before=before,
                tokens_after=_tokens(messages),
                summary_text=head.text,
                continues_lineage=last is not None,
            )
            analyses.append(analyzer.observe_compaction(obs))
            last = head.content
        fresh = [m for m in messages if m.id not in seen and not _is_summary(m)]
        seen.update(m.id for m in messages)
        tools = [estimate_tokens(m.text) for m in fresh if isinstance(m, ToolMessage)]
        content = sum(estimate_tokens(m.text) for m in fresh if m.type in ("human", "tool"))
        turn = analyzer.observe_turn(
            TurnObservation(_tokens(messages), None, content, tuple(tools))
        )
        settle(analyses, turn)
        previous = messages
    return analyzer, analyses


def _flags(attributes: dict[str, Any]) -> set[str]:
    return {kind.value for kind, flag in sc.FLAG_BY_KIND.items() if attributes.get(flag)}


def test_livelock_verdict_matches_the_sdk_level_replay(
    cap: Capture, handler: CompactionCallbackHandler
) -> None:
    """Growing summaries cause livelock, flagged on the same compactions as an SDK-level replay."""
    model = ScriptedAgentModel(turns=34)
    run(summarizing_agent(model, GrowingSummarizer(growth=150), trigger_tokens=1500))

    replayed, analyses = _replay(model.inputs)
    compactions = _compactions(cap)
    assert len(compactions) == len(analyses) >= 5
    assert [c[sc.TURN_INDEX] for c in compactions] == [a.record.turn_index for a in analyses]
    assert [c.get(sc.CYCLE_INTERVAL_TURNS) for c in compactions] == [
        a.record.cycle.interval_turns if a.record.cycle else None for a in analyses
    ]
    # A compaction's findings: the flags on its span, and those its settlement by the next
    # call added (finding spans, after the compaction span ended).
    late = [dict(s.attributes or {}) for s in cap.spans_named(sc.SPAN_FINDING)]
    found = [
        _flags(c) | {f[sc.FINDING_KIND] for f in late if f[sc.COMPACTION_ID] == c[sc.COMPACTION_ID]}
        for c in compactions
    ]
    assert found == [{f.kind.value for f in a.findings} for a in analyses]
    assert FindingKind.REEXPANSION_LIVELOCK.value in found[-1]
    assert handler.registry.get("thread-1").livelocked is replayed.livelocked is True
