"""Rediscovery from another instrumentation's spans, where content capture records the calls."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_compaction.model import Rediscovery
from otel_compaction.otlp.decode import Signal, parse_protobuf
from otel_compaction.otlp.extract import span_items
from otel_compaction.otlp.state import ConversationState
from otel_compaction.testing.llm_api import RecordedRequest, Reply, ToolCall
from tests.dialects.runs import Server, run_agent, settings

REREAD = ("src/m1.py", "src/m2.py")
"""What the agent reads again after its first compaction (it read them before)."""


@dataclass
class Rereading(Server):
    """Reads a new file each call; right after the first summary, reads two of them again."""

    def reply(self, request: RecordedRequest) -> Reply:
        """A new file each call, or the files to read again after the first compaction."""
        if not request.body.get("tools"):
            return super().reply(request)
        self.agent_calls += 1
        after = self.agent_calls - self.compacted_at[0] - 1 if self.compacted_at else -1
        path = REREAD[after] if 0 <= after < len(REREAD) else f"src/m{self.agent_calls}.py"
        return Reply(text="", tool_calls=(ToolCall("read_file", {"path": path}),))


def _rediscovery(data: bytes) -> tuple[list[Rediscovery], bool]:
    """Each compaction's rediscovery as the processor's reading and engine measure it, and
    whether the conversation has a baseline (None: its calls' inputs were unknown)."""
    state = ConversationState(settings(), window=0.0)
    request = parse_protobuf(Signal.TRACES, data)
    state.offer(span_items(request, settings().model_windows, targets=False))
    found: list[Rediscovery] = []
    for applied in state.drain():
        if applied.turn is not None:
            found += applied.turn.rediscovered
    known = False
    for analyzer, _, _ in state.tracked():
        found += analyzer.finish_rediscovery()
        known = known or analyzer.rediscovery_baseline is not None
    return found, known


@pytest.mark.slow
def test_the_official_instrumentations_content_gives_each_compactions_rediscovery(
    tmp_path: Path,
) -> None:
    """Under the official OpenAI instrumentation with content capture, the two files read
    again after the first compaction are its rediscovery (their tool-call parts give the
    keys); without content capture no call's input is known: no figure at all."""
    data, server = run_agent(
        "genai_official", "genai_official", tmp_path, capture=True, steps=34, server=Rereading()
    )
    assert server.compacted_at
    found, known = _rediscovery(data)
    assert known
    first = next(r for r in found if r.compaction_id is not None)
    assert (first.calls, first.turns) == (2, 2)
    assert first.tokens > 0
    assert all(r.calls == 0 for r in found[1:])
    data, _ = run_agent(
        "genai_official", "genai_official", tmp_path, capture=False, steps=34, server=Rereading()
    )
    assert _rediscovery(data) == ([], False)
