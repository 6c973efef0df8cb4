"""What a reader yields: the engine's inputs, per conversation, in the order they happened.

A reader turns one file into a stream of :data:`Event` values. Feeding them, in
order, to a :class:`~otel_compaction.engine.ConversationRegistry` (see
:mod:`otel_compaction.transcripts.replay`) gives the same analysis the live
instrumentation would have made; ``otel-compaction import`` also turns them
back into spans, which is why a turn carries the call's own figures
(:class:`CallInfo`) next to the engine's :class:`TurnObservation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_compaction.model import CompactionObservation, PhaseReport, TurnObservation


@dataclass(frozen=True, slots=True)
class CallInfo:
    """An LLM call's own figures, beyond what the engine needs.

    Args:
        provider: ``gen_ai.provider.name`` (``anthropic``, ``openai``...).
        response_id: the provider's message or response id.
        input_tokens: input tokens, cached ones included.
        output_tokens: output tokens.
        cache_read_tokens / cache_write_tokens: the cached parts of the input.
        start_time / end_time: seconds since the epoch, when the file says.
    """

    provider: str | None = None
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    start_time: float | None = None
    end_time: float | None = None


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """Announces a conversation before its first turn: who wrote it and where.

    ``session_id`` is the id the agent itself gave (``gen_ai.conversation.id``);
    None when the conversation id had to be made up (e.g. a sub-agent's).
    """

    conversation_id: str
    agent: str | None = None
    session_id: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One LLM call. ``turn_index`` is the index the file recorded, if any (ordering only)."""

    conversation_id: str
    observation: TurnObservation
    call: CallInfo = field(default_factory=CallInfo)
    turn_index: int | None = None


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One compaction, to be observed before the first call that sees its result.

    ``end_time`` is when the compaction finished (its summary was written), if known.
    """

    conversation_id: str
    observation: CompactionObservation
    end_time: float | None = None


@dataclass(frozen=True, slots=True)
class PhaseEvent:
    """A phase the agent reported about itself."""

    conversation_id: str
    report: PhaseReport
    timestamp: float | None = None


Event = ConversationInfo | TurnEvent | CompactionEvent | PhaseEvent
"""Anything a reader yields."""
