"""Placement by the strongest evidence: agents that start alike stay apart, the same in every
process, and the histories kept are bounded in bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest

from otel_compaction import semconv as sc
from otel_compaction.inference.history import HistoryTracker
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import Capture
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply, ToolCall
from tests.instrument.conftest import MODEL, anthropic_client, attrs

SYSTEM = "You are a coding agent."
TASK = {"role": "user", "content": "Fix the failing test."}
SUMMARY = "Summary: read the fixture and the test; the fixture is stale."


class Agent:
    """One scripted tool-using agent over the real anthropic client."""

    def __init__(self, client: anthropic.Anthropic, name: str) -> None:
        self.client = client
        self.name = name
        self.messages: list[Any] = [dict(TASK)]
        self.turns = 0

    def call(self) -> None:
        """One turn: the call, its reply and a tool result of this agent's own."""
        self.turns += 1
        message = self.client.messages.create(
            model=MODEL, max_tokens=256, system=SYSTEM, messages=self.messages
        )
        self.messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        output = f"{self.name} output {self.turns}: " + f"{self.name} data " * 60
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": output} for u in uses]
        self.messages.append({"role": "user", "content": results or "Continue."})

    def compact(self) -> None:
        """Replace all but the task and the last two turns by a summary."""
        self.messages = [
            self.messages[0],
            {"role": "user", "content": SUMMARY},
            *self.messages[-4:],
        ]


def _same_replies() -> anthropic.Anthropic:
    """Every call answered alike, tool-use ids included (a scripted twin of the same task)."""

    def reply(request: RecordedRequest) -> Reply:
        return Reply("", tool_calls=(ToolCall("read_file", {"path": "a.py"}, id="toolu_same"),))

    return anthropic_client(FakeLLMAPI(reply))


def _by_conversation(cap: Capture) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for span in cap.spans:
        a = attrs(span)
        if sc.CONVERSATION_ID in a and span.name != sc.SPAN_COMPACTION:
            out.setdefault(str(a[sc.CONVERSATION_ID]), []).append(a)
    return out


def test_two_agents_opening_alike_and_calling_in_turn_stay_two(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Same system prompt, same first message, calls interleaved A, B, A, B...: two
    conversations, each numbered 1 to 6, and no invented compaction."""
    reads = Reply("", tool_calls=(ToolCall("read_file", {"path": "a.py"}),))
    a = Agent(anthropic_client(FakeLLMAPI(default=reads)), "alpha")
    b = Agent(anthropic_client(FakeLLMAPI(default=reads)), "beta")
    for _ in range(6):
        a.call()
        b.call()
    conversations = _by_conversation(cap)
    assert len(conversations) == 2
    for spans in conversations.values():
        assert [s[sc.TURN_INDEX] for s in spans] == [1, 2, 3, 4, 5, 6]
    assert not cap.spans_named(sc.SPAN_COMPACTION)


def test_twins_with_identical_replies_stay_two_with_one_compaction_each(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Two agents on one client answered identically (tool-use ids too) but with their own
    tool outputs, side by side in one thread: two conversations, one compaction each, each
    in the conversation whose tail it kept."""
    client = _same_replies()
    a, b = Agent(client, "alpha"), Agent(client, "beta")
    for turn in range(8):
        if turn == 6:
            a.compact()
            b.compact()
        a.call()
        b.call()
    compactions = [attrs(s) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    assert len(compactions) == 2
    assert len({c[sc.CONVERSATION_ID] for c in compactions}) == 2
    conversations = _by_conversation(cap)
    assert len(conversations) == 2
    assert sorted(len(v) for v in conversations.values()) == [8, 8]


def test_a_divergence_between_two_histories_is_never_a_compaction() -> None:
    """A request whose new part starts with a model reply or a tool result where the
    other history had its own is another history, not a rewrite (pure placement)."""
    tracker = HistoryTracker()
    task = {"role": "user", "content": "Fix it."}
    first = [task, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "r-a1"}]
    first += [{"role": "assistant", "content": "A2"}, {"role": "user", "content": "r-a2"}]
    tracker.place(None, SYSTEM, first)
    other = [task, {"role": "assistant", "content": "B1"}, {"role": "user", "content": "r-b1"}]
    other += [{"role": "assistant", "content": "B2"}, {"role": "user", "content": "r-b2"}]
    placed = tracker.place(None, SYSTEM, other)
    assert placed.rewrite is None


def test_histories_kept_are_bounded_in_characters() -> None:
    """Each call opening a conversation with a fresh 1 MB message the caller then drops:
    the tracker keeps at most ``max_chars`` of them (the current one always)."""
    tracker = HistoryTracker(max_chars=3_000_000)
    for n in range(20):
        message = {"role": "user", "content": f"{n} " + "x" * 1_000_000}
        tracker.place(None, SYSTEM, [message])
    assert len(tracker) == 2  # 2 MB kept of the 20 MB seen: the bound, the newest first


_PROBE = r"""
import json, sys
sys.path.insert(0, {root!r})
from otel_compaction.testing import capture_telemetry
from otel_compaction.instrument import CompactionInstrumentor
from tests.instrument.test_placement import Agent, _same_replies, attrs, sc
with capture_telemetry() as cap:
    instrumentor = CompactionInstrumentor()
    instrumentor.instrument(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        client = _same_replies()
        a, b = Agent(client, "alpha"), Agent(client, "beta")
        for turn in range(8):
            if turn == 6:
                a.compact(); b.compact()
            a.call(); b.call()
    finally:
        instrumentor.uninstrument()
    ids = {{}}
    out = []
    for span in sorted(cap.spans, key=lambda s: s.start_time):
        d = {{k: v for k, v in attrs(span).items() if k not in (sc.COMPACTION_ID,)}}
        cid = d.get(sc.CONVERSATION_ID)
        if cid is not None:
            d[sc.CONVERSATION_ID] = ids.setdefault(cid, len(ids))
        d.pop(sc.LINEAGE_ROOT_ID, None)
        out.append([span.name, sorted((k, repr(v)) for k, v in d.items())])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_same_run_gives_the_same_spans_under_every_hash_seed() -> None:
    """The twins' run in three processes with different PYTHONHASHSEED values: the same
    spans, attribute for attribute (ids renamed in order of appearance)."""
    root = str(Path(__file__).resolve().parents[2])
    code = _PROBE.format(root=root)
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())
