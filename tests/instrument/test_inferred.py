"""Compactions inferred from rewritten histories, with lineage, and conversations across them."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from tests.instrument.conftest import (
    MODEL,
    attrs,
    chat_spans,
    compaction_attrs,
    reading_client,
)

SYSTEM = "You are a debugging agent."
TASK = {"role": "user", "content": "The integration test fails; find out why."}


class Agent:
    """A scripted tool-using agent over the real anthropic client."""

    def __init__(self, client: anthropic.Anthropic, task: dict[str, Any] = TASK) -> None:
        self.client = client
        self.messages: list[Any] = [task]

    def turn(self, output: str = "data " * 80) -> None:
        message = self.client.messages.create(
            model=MODEL, max_tokens=256, system=SYSTEM, messages=self.messages
        )
        self.messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": output} for u in uses]
        self.messages.append({"role": "user", "content": results or "continue"})

    def summarize(self, summary: str, keep: int = 2) -> None:
        """Replace all but the task and the last ``keep`` messages by a summary message."""
        tail = self.messages[len(self.messages) - keep :] if keep else []
        self.messages = [self.messages[0], {"role": "user", "content": summary}, *tail]


def test_summary_replacing_the_head_is_an_inferred_lossy_compaction(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Head replaced by a summary, tail kept: one compaction span, flagged on the next call."""
    agent = Agent(reading_client())
    for _ in range(5):
        agent.turn()
    agent.summarize("Summary: goal fix the test; plan read the fixture.")
    agent.turn()
    agent.turn()
    (compaction,) = compaction_attrs(cap)
    spans = [attrs(s) for s in chat_spans(cap)]
    assert compaction[sc.COMPACTION_SOURCE] == "inferred"
    assert compaction[sc.COMPACTION_MODE] == "lossy"
    assert compaction[sc.COMPACTION_TRIGGER] == "history_rewritten"
    assert compaction[sc.TURN_INDEX] == 6
    assert compaction[sc.CONVERSATION_ID] == spans[0][sc.CONVERSATION_ID]
    assert compaction[sc.TOKENS_BEFORE] > compaction[sc.TOKENS_AFTER]
    assert compaction[sc.TOKENS_SUMMARY] > 0
    assert compaction[sc.TOKENS_RETAINED_TAIL] > 0
    assert compaction[sc.LINEAGE_GENERATION] == 0
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3, 4, 5, 6, 7]
    assert len({s[sc.CONVERSATION_ID] for s in spans}) == 1
    assert spans[5].get(sc.GEN_AI_CONVERSATION_COMPACTED) is True
    assert sc.GEN_AI_CONVERSATION_COMPACTED not in spans[6]
    assert sc.GEN_AI_CONVERSATION_COMPACTED not in spans[4]


def test_compaction_span_is_a_child_of_the_first_call_that_sees_it(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The compaction span sits in the trace of the call that first sends the compacted context."""
    agent = Agent(reading_client())
    for _ in range(3):
        agent.turn()
    agent.summarize("Summary of the work.")
    agent.turn()
    (span,) = cap.spans_named(sc.SPAN_COMPACTION)
    parent = chat_spans(cap)[-1]
    assert span.kind.name == "INTERNAL"
    assert span.parent is not None
    assert span.parent.span_id == parent.context.span_id
    assert span.context.trace_id == parent.context.trace_id


def test_summary_of_summary_continues_the_lineage_with_a_link(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A second summary that carries the first one is generation 1, linked to its parent's span."""
    agent = Agent(reading_client())
    for _ in range(4):
        agent.turn()
    agent.summarize("First summary: the fixture is stale.")
    for _ in range(4):
        agent.turn()
    agent.summarize("First summary: the fixture is stale. Then: patched the fixture loader.")
    agent.turn()
    first, second = cap.spans_named(sc.SPAN_COMPACTION)
    a, b = attrs(first), attrs(second)
    assert b[sc.LINEAGE_PARENT_ID] == a[sc.COMPACTION_ID]
    assert b[sc.LINEAGE_GENERATION] == 1
    assert b[sc.LINEAGE_ROOT_ID] == a[sc.COMPACTION_ID]
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    assert b[sc.CYCLE_INTERVAL_TURNS] == 4


def test_a_fresh_summary_that_replaced_the_first_starts_a_new_lineage(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The first summary sat in the region the second compaction replaced, but the second
    summary was written from the raw turns and carries none of it: generation 0."""
    agent = Agent(reading_client())
    for _ in range(4):
        agent.turn()
    agent.summarize("First summary: the fixture is stale.")
    for _ in range(4):
        agent.turn()
    agent.summarize("Patched the loader after reading the failing assertion again.")
    agent.turn()
    _, second = cap.spans_named(sc.SPAN_COMPACTION)
    b = attrs(second)
    assert b[sc.LINEAGE_GENERATION] == 0
    assert sc.LINEAGE_PARENT_ID not in b
    assert not second.links


def test_a_long_verbatim_tail_does_not_make_a_lossy_rewrite_extractive(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The boundary incident shape: the early turns (their tool outputs) summarized away, the
    last nine turns kept verbatim: the evidence was lost, so it is lossy, whatever the tail."""
    agent = Agent(reading_client())
    for turn in range(12):
        agent.turn(output=f"fixture {turn} stale " + "data " * 80)
    agent.summarize("Summary of the early exploration.", keep=18)
    agent.turn()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_MODE] == "lossy"
    assert compaction[sc.TOKENS_RETAINED_TAIL] > 0


def test_a_rewrite_whose_dropped_content_survives_is_extractive(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The removed tool outputs are still in the new context (moved into the summary
    message verbatim): nothing was lost, so the rewrite is extractive."""
    agent = Agent(reading_client())
    outputs = [f"assertion {n} failed in fixture_{n}.py line {n * 7} " * 12 for n in range(6)]
    for output in outputs:
        agent.turn(output=output)
    # Everything from the first tool result on, kept word for word in one message.
    agent.summarize("Verbatim record of the earlier tool outputs:\n" + "\n".join(outputs))
    agent.turn()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_MODE] == "extractive"


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: 1_200})])
def test_compacting_again_one_call_later_is_lossy(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """The livelock's late shape: compacted again one call after the last, the rewrite drops
    only the previous summary (which the new one carries) and summarizes a turn no call
    carried. The carried summary is lineage, not evidence kept: lossy, generation 1."""
    agent = Agent(reading_client())
    for turn in range(5):
        agent.turn(output=f"fixture {turn} stale " + "data " * 80)
    first = " ".join(
        f"Step {n}: read fixture_{n}.py and found the loader stale." for n in range(70)
    )
    agent.summarize(first, keep=0)
    agent.turn(output="fixture_9.py line 40 still points at the old path " * 10)
    agent.summarize(first + " Then: fixture_9.py line 40 points at the old path.", keep=0)
    agent.turn()
    _, second = (attrs(s) for s in cap.spans_named(sc.SPAN_COMPACTION))
    assert second[sc.COMPACTION_MODE] == "lossy"
    assert second[sc.LINEAGE_GENERATION] == 1


def test_tool_outputs_cleared_in_place_is_a_prune(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Old tool results replaced by a placeholder, everything else kept: a prune."""
    agent = Agent(reading_client())
    for _ in range(4):
        agent.turn()
    for message in agent.messages[2:6]:
        if isinstance(message["content"], list) and message["role"] == "user":
            message_index = agent.messages.index(message)
            cleared = [{**block, "content": "[cleared]"} for block in message["content"]]
            agent.messages[message_index] = {"role": "user", "content": cleared}
    agent.turn()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_MODE] == "prune"
    assert compaction[sc.COMPACTION_TRIGGER] == "tool_outputs_cleared"
    assert len({attrs(s)[sc.CONVERSATION_ID] for s in chat_spans(cap)}) == 1


def test_dropping_old_messages_is_a_prune(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Old turns dropped with nothing in their place: a prune (messages_dropped)."""
    agent = Agent(reading_client())
    for _ in range(5):
        agent.turn()
    agent.messages = [agent.messages[0], *agent.messages[-4:]]
    agent.turn()
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_MODE] == "prune"
    assert compaction[sc.COMPACTION_TRIGGER] == "messages_dropped"


def test_summary_that_replaced_the_task_too_continues_the_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """A summary in place of everything but a verbatim tail (task included) keeps the thread."""
    agent = Agent(reading_client())
    for _ in range(5):
        agent.turn()
    agent.messages = [{"role": "user", "content": "Summary: all of it."}, *agent.messages[-3:]]
    agent.turn()
    assert len({attrs(s)[sc.CONVERSATION_ID] for s in chat_spans(cap)}) == 1
    (compaction,) = compaction_attrs(cap)
    assert compaction[sc.COMPACTION_SOURCE] == "inferred"


def test_a_fresh_run_of_the_same_task_is_a_new_conversation(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Starting the same task again from scratch is no compaction of the previous run."""
    client = reading_client()
    first = Agent(client)
    for _ in range(4):
        first.turn()
    second = Agent(client)
    for _ in range(2):
        second.turn()
    spans = [attrs(s) for s in chat_spans(cap)]
    assert spans[0][sc.CONVERSATION_ID] != spans[4][sc.CONVERSATION_ID]
    assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3, 4, 1, 2]
    assert compaction_attrs(cap) == []


def test_interleaved_agents_compacting_stay_two_conversations(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Two agents with different tasks interleave calls and each compacts: two conversations."""
    client = reading_client()
    a = Agent(client, {"role": "user", "content": "Task A"})
    b = Agent(client, {"role": "user", "content": "Task B"})
    for i in range(8):
        a.turn()
        b.turn()
        if i == 4:
            a.summarize("Summary A")
            b.summarize("Summary B")
    ids = [attrs(s)[sc.CONVERSATION_ID] for s in chat_spans(cap)]
    assert len(set(ids)) == 2
    assert ids[0::2] == [ids[0]] * 8
    compactions = compaction_attrs(cap)
    assert len(compactions) == 2
    assert {c[sc.CONVERSATION_ID] for c in compactions} == set(ids)
