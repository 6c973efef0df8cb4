"""``advise()``: an instrumented agent asks about its current conversation and acts on the answer.

The agent is the one of docs/runbooks/CompactionReexpansionLivelock.md ("Act on it in the
agent"): the livelock incident's summary-of-summary compactions through the real anthropic client, a
finding callback, and a lineage reset when ``advise()`` says so.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from otel_compaction import AdviceAction, CompactionInstrumentor, advise, conversation
from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.semconv import FindingKind
from otel_compaction.testing import Capture
from tests.instrument.conftest import MODEL, attrs
from tests.instrument.test_agent_notes import CONSTRAINTS, WINDOW_004, CompactingAgent, _step

TURNS = 60
"""The livelock incident's 40 turns, and 20 more to show the run after the reset."""


class AdvisedAgent(CompactingAgent):
    """The livelock incident's agent, asking ``advise()`` after each call, resetting when told."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(reset_lineage=False)
        self.name = name
        self.advice: list[tuple[int, AdviceAction]] = []

    def run(self) -> None:
        if self.name is None:
            self._loop()
            return
        with conversation(self.name):  # one conversation, whatever the system prompt becomes
            self._loop()

    def _loop(self) -> None:
        messages: list[Any] = [self.task]
        context, cycle = 0, 0
        for turn in range(1, TURNS + 1):
            if context >= 0.85 * WINDOW_004:
                cycle += 1
                self.summary = self._summarize(cycle)
                messages = [self.task, {"role": "user", "content": self.summary}, *messages[-2:]]
            context = _step(self.client, self.system, messages, 1200)
            advice = advise()  # the conversation() block's, else the one of the call just made
            self.advice.append((turn, advice.action))
            if advice.action is AdviceAction.RESET_LINEAGE and not self.reset:
                self.reset = True  # summaries from the raw turns only, the prior one dropped
                self.system += " " + CONSTRAINTS  # constraints pinned outside the compacted region


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: WINDOW_004})])
def test_agent_acting_on_advise_resets_its_lineage_and_leaves_the_livelock(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """advise() says reset_lineage right after the livelock finding; after the reset it does not."""
    agent = AdvisedAgent("migration-17")
    agent.run()
    livelock = [f for f in cap.findings if f.kind is FindingKind.REEXPANSION_LIVELOCK]
    assert livelock, "the summary-of-summary run must be flagged first"
    first_reset = next(
        turn for turn, action in agent.advice if action is AdviceAction.RESET_LINEAGE
    )
    assert first_reset == livelock[0].turn
    assert [a for t, a in agent.advice if t < first_reset].count(AdviceAction.RESET_LINEAGE) == 0
    compactions = [attrs(s) for s in cap.spans_named(sc.SPAN_COMPACTION)]
    after = [c for c in compactions if c[sc.TURN_INDEX] > first_reset]
    assert after, "the agent compacts again after the reset"
    before = [c for c in compactions if c[sc.TURN_INDEX] <= first_reset]
    # The prior summary is dropped: what the new summaries repeat is a few words, not it.
    assert max(c[sc.TOKENS_CARRIED_OVER] for c in after) < 0.05 * before[-1][sc.TOKENS_CARRIED_OVER]
    assert not any(c.get(sc.FLAG_LIVELOCK) for c in after[1:])
    recovered = next(
        t for t, a in agent.advice if t > first_reset and a is not AdviceAction.RESET_LINEAGE
    )
    assert recovered == after[1][sc.TURN_INDEX]  # the first compaction at a recovered cadence
    assert agent.advice[-1][1] is not AdviceAction.RESET_LINEAGE
    assert agent.advice[0][1] is AdviceAction.CONTINUE  # one turn in: no pressure


def test_advise_names_the_conversation_it_has_not_seen(
    instrumented: CompactionInstrumentor,
) -> None:
    """Before any call, advise() is `continue` and says why; it never raises."""
    assert advise().action is AdviceAction.CONTINUE
    assert "no instrumented LLM call" in advise().reason
    with conversation("ticket-4711"):
        advice = advise()
    assert advice.action is AdviceAction.CONTINUE
    assert "'ticket-4711'" in advice.reason


@pytest.mark.parametrize("settings", [Settings(model_windows={MODEL: WINDOW_004})])
def test_advise_without_a_name_is_about_the_last_call_of_this_context(
    cap: Capture, instrumented: CompactionInstrumentor
) -> None:
    """Unnamed, advise() is about this context's last call; another thread's is its own."""
    agent = AdvisedAgent()
    agent.run()
    last = attrs(cap.spans[-1])[sc.CONVERSATION_ID]
    assert advise() == advise(last)
    assert AdviceAction.RESET_LINEAGE in [a for _, a in agent.advice]
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(advise().reason))
    thread.start()
    thread.join()
    assert seen == ["no instrumented LLM call seen in this context yet"]
