"""The resume rule: a new agent process's turn 1 continues the conversation, an old one is late."""

from __future__ import annotations

from otel_compaction.config import Settings
from otel_compaction.otlp.extract import Item, span_items
from otel_compaction.otlp.state import ConversationState
from otel_compaction.semconv import ProcessorReason
from tests.hostile.inputs import trace_request, turn


def _state(skipped: list[ProcessorReason]) -> ConversationState:
    return ConversationState(Settings(), window=0.0, dedupe_memory=0,
                             on_skip=lambda _item, reason: skipped.append(reason))  # fmt: skip


def _turns(first: int, last: int, seed: int, shift: int = 0) -> list[Item]:
    request = trace_request(*(turn("conv", n, 1000 * n) for n in range(first, last + 1)), seed=seed)
    for span in request.resource_spans[0].scope_spans[0].spans:
        span.start_time_unix_nano += shift
    return list(span_items(request))


def test_a_turn_one_that_started_after_the_mark_continues_the_conversation() -> None:
    """Turns 1-3 of a second process, started after turn 5 of the first, are turns 6-8."""
    skipped: list[ProcessorReason] = []
    state = _state(skipped)
    state.offer(_turns(1, 5, seed=1))
    state.step()
    state.offer(_turns(1, 3, seed=2, shift=10**12))
    applied = state.step()
    assert (len(applied), skipped) == (3, [])
    assert (state.base("conv"), state.tracked()[0][2]) == (5, 8)


def test_a_turn_one_sent_again_stays_late_even_without_span_id_memory() -> None:
    """The first process's turns 1-3 sent again (a retry, a replay) do not look like a resume."""
    skipped: list[ProcessorReason] = []
    state = _state(skipped)
    state.offer(_turns(1, 5, seed=1))
    state.step()
    state.offer(_turns(1, 3, seed=1))
    assert state.step() == []
    assert skipped == [ProcessorReason.LATE] * 3
    assert state.base("conv") == 0
