"""LangChain events into the engine's observations: compactions and turns.

Each ``*_observation`` function looks at what one callback saw and returns a
``CompactionObservation`` (or None when nothing was compacted). Sizes are our
estimate brought to the provider's scale (``ConversationMemory.scaled``), so the
compaction's sizes and the turns' usage-based sizes are comparable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.instrument.langchain import _messages as msg
from otel_compaction.instrument.langchain._scan import InputScan
from otel_compaction.instrument.langchain._state import ConversationMemory
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import CompactionMode, CompactionSource, CompactionTrigger
from otel_compaction.signals.tokens import estimate_tokens


def summarization_observation(
    before: Sequence[BaseMessage],
    output: msg.SummarizationOutput,
    state: ConversationMemory,
    analyzer: ConversationAnalyzer,
) -> CompactionObservation:
    """A ``SummarizationMiddleware`` firing: history ``before`` replaced by ``output``.

    Lineage: the summarizer's input, when seen, decides whether the previous
    summary was summarized again (it may have been trimmed away); without it the
    lineage tracker infers it from the compacted messages.
    """
    kept_keys = {msg.message_key(m) for m in output.kept}
    compacted = [m for m in before if msg.message_key(m) not in kept_keys]
    parent_id, continues = _summary_lineage(compacted, state.take_summarizer_texts(), analyzer)
    summary_tokens = state.scaled(msg.message_tokens(output.summary))
    retained = state.scaled(msg.messages_tokens(output.kept))
    return CompactionObservation(
        source=CompactionSource.LANGCHAIN,
        mode=CompactionMode.LOSSY,
        trigger=CompactionTrigger.AUTO,
        tokens_before=state.scaled(msg.messages_tokens(before)),
        tokens_after=summary_tokens + retained,
        summary_tokens=summary_tokens,
        retained_tail_tokens=retained,
        summary_text=msg.message_text(output.summary),
        compacted_texts=tuple(msg.message_text(m) for m in compacted),
        retained_texts=tuple(msg.message_text(m) for m in output.kept),
        parent_id=parent_id,
        continues_lineage=continues,
    )


def _summary_lineage(
    compacted: Sequence[BaseMessage], summarizer_texts: list[str], analyzer: ConversationAnalyzer
) -> tuple[str | None, bool | None]:
    """(parent id, continues) of a summarization, from what the summarizer read."""
    previous = [m for m in compacted if msg.is_summary_message(m)]
    if not previous:
        return None, False  # only raw turns were summarized: a fresh lineage
    if not summarizer_texts:
        return None, None  # let the tracker match the compacted summary
    read = "\n".join(summarizer_texts)
    parent = analyzer.is_known_summary(read)
    if parent is not None:
        return parent, True
    bodies = [msg.message_text(m) for m in previous]
    if any(_body(b) in read for b in bodies):
        return None, True  # an earlier summary we never saw (e.g. a restored thread)
    return None, False  # the summarizer's input was trimmed past the old summary


def _body(summary: str) -> str:
    """The summary text without the middleware's fixed preamble."""
    return summary.partition("\n\n")[2].strip() or summary.strip()


def prune_observation(scan: InputScan, state: ConversationMemory) -> CompactionObservation | None:
    """Tool results newly cleared by ``ClearToolUsesEdit`` in a model call's input."""
    if not scan.cleared:
        return None
    after = state.scaled(scan.live_tokens)
    reclaimed, known = 0, False
    for message in scan.cleared:
        key = msg.tool_message_key(message)
        state.cleared.put(key, 0)
        original = state.tool_tokens.peek(key)
        if original is not None:
            known = True
            reclaimed += max(0, state.scaled(original - msg.message_tokens(message)))
    return CompactionObservation(
        source=CompactionSource.LANGCHAIN,
        mode=CompactionMode.PRUNE,
        trigger=CompactionTrigger.CLEAR_TOOL_USES,
        tokens_before=after + reclaimed if known else None,
        tokens_after=after,
        continues_lineage=False,
    )


def server_observations(
    response: AIMessage, messages: Sequence[BaseMessage], state: ConversationMemory
) -> list[CompactionObservation]:
    """Anthropic server-side compactions carried as blocks in a ``ChatAnthropic`` response."""
    blocks = msg.compaction_blocks(response)
    if not blocks:
        return []
    live = msg.live_context(messages)
    before = state.scaled(msg.messages_tokens(live))
    after = _usage_input_tokens(response)
    out = []
    for block in blocks:
        summary = block.get("content")
        text = summary if isinstance(summary, str) else None
        summary_tokens = state.scaled(estimate_tokens(text)) if text else None
        out.append(
            CompactionObservation(
                source=CompactionSource.LANGCHAIN,
                mode=CompactionMode.SERVER,
                trigger=CompactionTrigger.AUTO,
                tokens_before=before,
                tokens_after=after if after is not None else summary_tokens,
                summary_tokens=summary_tokens,
                summary_text=text,
                compacted_texts=tuple(msg.message_text(m) for m in live),
                failed=text is None,
            )
        )
    return out


def running_summary_observation(
    inputs: object, outputs: object, state: ConversationMemory, analyzer: ConversationAnalyzer
) -> CompactionObservation | None:
    """A langmem ``RunningSummary`` that is new in a run's output (created or extended)."""
    new = msg.find_running_summary(outputs)
    if new is None:
        return None
    signature = _signature(new)
    if signature == state.running_summary:
        return None
    old = msg.find_running_summary(inputs)
    state.running_summary = signature
    if old is not None and _signature(old) == signature:
        return None
    old_ids: set[str] = set(old.summarized_message_ids) if old is not None else set()
    messages = msg.state_messages(inputs) or []
    unsummarized = [m for m in messages if m.id not in old_ids]
    compacted = [m for m in unsummarized if m.id in new.summarized_message_ids]
    kept = [m for m in unsummarized if m.id not in new.summarized_message_ids]
    old_tokens = estimate_tokens(old.summary) if old is not None else 0
    summary_tokens = state.scaled(estimate_tokens(new.summary))
    retained = state.scaled(msg.messages_tokens(kept))
    return CompactionObservation(
        source=CompactionSource.LANGCHAIN,
        mode=CompactionMode.LOSSY,
        trigger=CompactionTrigger.RUNNING_SUMMARY,
        tokens_before=state.scaled(msg.messages_tokens(unsummarized) + old_tokens)
        if messages
        else None,
        tokens_after=summary_tokens + retained if messages else None,
        summary_tokens=summary_tokens,
        retained_tail_tokens=retained if messages else None,
        summary_text=new.summary,
        compacted_texts=tuple(msg.message_text(m) for m in compacted)
        + ((old.summary,) if old is not None else ()),
        parent_id=analyzer.is_known_summary(old.summary) if old is not None else None,
        continues_lineage=old is not None,
    )


def _signature(summary: Any) -> tuple[int, str | None, int]:
    return (
        hash(summary.summary),
        getattr(summary, "last_summarized_message_id", None),
        len(summary.summarized_message_ids),
    )


def _usage_input_tokens(response: AIMessage) -> int | None:
    usage = response.usage_metadata
    if usage and usage.get("input_tokens"):
        return int(usage["input_tokens"])
    return None


def context_tokens(
    response: AIMessage | None,
    llm_output: Mapping[str, Any] | None,
    estimated: int,
    state: ConversationMemory,
) -> int:
    """Tokens in a call's context: reported usage when present, else our estimate.

    A reported figure also recalibrates the estimate for this conversation.
    """
    reported = _usage_input_tokens(response) if response is not None else None
    if reported is None and llm_output:
        usage = llm_output.get("token_usage") or llm_output.get("usage") or {}
        if isinstance(usage, Mapping):
            value = usage.get("prompt_tokens") or usage.get("input_tokens")
            reported = int(value) if isinstance(value, int) and value > 0 else None
    if reported is None:
        return state.scaled(estimated)
    state.calibrate(reported, estimated)
    return reported


def turn_observation(
    *,
    response: AIMessage | None,
    model: str | None,
    context: int,
    scan: InputScan,
    state: ConversationMemory,
) -> TurnObservation:
    """One chat-model call as a turn; tool runs the model did not ask for join its tools."""
    calls = list(response.tool_calls) if response is not None else []
    names = [c["name"] for c in calls]
    arguments: list[str | None] = [msg.block_text({"input": c.get("args", {})}) for c in calls]
    state.requested_tool_ids = {i for c in calls if (i := c.get("id"))}
    extra, state.extra_tools = state.extra_tools, []
    return TurnObservation(
        context_tokens=context,
        model=model,
        new_content_tokens=scan.new_content,
        tool_output_tokens=tuple(scan.tool_outputs),
        tool_calls=tuple(extra + names),
        tool_arguments=tuple([None] * len(extra) + arguments),
    )
