"""The per-conversation engine and the bounded, expiring, thread-safe registry."""

from __future__ import annotations

import logging
import threading

import pytest

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.emit.attributes import compaction_attributes
from otel_compaction.engine import ConversationAnalyzer, ConversationRegistry
from otel_compaction.model import (
    CompactionObservation,
    Finding,
    PhaseReport,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind
from tests.detectors.scenarios import NOTE_004_INTERVALS, note_004_run


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def turn(tokens: int = 10_000, **kw: object) -> TurnObservation:
    """A turn on a 200k window."""
    return TurnObservation(context_tokens=tokens, window=200_000, **kw)  # type: ignore[arg-type]


def compaction(**kw: object) -> CompactionObservation:
    """An explicit lossy compaction."""
    return CompactionObservation(source=CompactionSource.EXPLICIT, **kw)  # type: ignore[arg-type]


def test_turns_are_numbered_from_one_with_pressure() -> None:
    """observe_turn numbers turns 1, 2, ... and computes the token fraction on the window."""
    an = ConversationAnalyzer("c", Settings())
    first = an.observe_turn(turn(50_000))
    second = an.observe_turn(turn(100_000, tool_output_tokens=(20_000,)))
    assert (first.turn_index, second.turn_index, an.turn_index) == (1, 2, 2)
    assert second.pressure.token_fraction == 0.5
    assert second.pressure.attention_decay == pytest.approx(0.1)
    assert first.conversation_id == "c"


def test_context_tokens_follow_the_pressure() -> None:
    """context_tokens is the last pressure's context tokens, None before the first turn."""
    an = ConversationAnalyzer("c", Settings())
    assert (an.context_tokens, an.pressure) == (None, None)
    an.observe_turn(turn(50_000, tool_output_tokens=(1_000,)))
    an.observe_turn(turn(70_000))
    assert an.pressure is not None
    assert an.context_tokens == an.pressure.context_tokens == 70_000


def test_window_comes_from_the_model_table_when_not_given() -> None:
    """Without an explicit window, the model's window (or the default) is used."""
    an = ConversationAnalyzer("c", Settings(model_windows={"my-model": 100_000}))
    analysis = an.observe_turn(TurnObservation(context_tokens=50_000, model="my-model"))
    assert analysis.pressure.window == 100_000


def test_compacted_flag_only_on_the_first_turn_after_a_compaction() -> None:
    """gen_ai.conversation.compacted: true on the first call that sees the compacted context."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn())
    record = an.observe_compaction(compaction()).record
    flags = [an.observe_turn(turn()).compacted for _ in range(3)]
    assert flags == [True, False, False]
    assert record.turn_index == 2


def test_phase_unknown_until_a_turn_or_report() -> None:
    """The phase is None before any signal; a report makes it known at once."""
    an = ConversationAnalyzer("c", Settings())
    before = an.phase
    assert before is None
    an.report_phase(PhaseReport("patch", confidence=0.9))
    after = an.phase
    assert after is not None
    assert after.name == "patch"


def test_transition_is_reported_on_the_turn_it_is_first_seen() -> None:
    """A reported phase change shows up as the transition of the next turn."""
    an = ConversationAnalyzer("c", Settings())
    for _ in range(3):  # enough evidence for a known phase (explore)
        an.observe_turn(turn(tool_calls=("read_file",)))
    an.report_phase(PhaseReport("patch", confidence=0.9))
    analysis = an.observe_turn(turn(tool_calls=("edit_file",)))
    assert analysis.transition is not None
    assert (analysis.transition.from_phase, analysis.transition.to_phase) == ("explore", "patch")
    assert analysis.transition.turn_index == 4
    assert an.phase_turns == 1


def test_the_first_known_phase_is_no_transition() -> None:
    """From unknown to a known phase is not a change of phase: no transition event."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn(tool_calls=("read_file",)))
    an.report_phase(PhaseReport("patch", confidence=0.9))
    assert an.observe_turn(turn(tool_calls=("edit_file",))).transition is None


def test_a_compaction_is_settled_by_the_next_call() -> None:
    """A compaction observed without its size after is measured by the next turn: the record
    gets that call's context, the source's own figure stays beside it, and the findings that
    needed the size come with the turn (here: it reclaimed nothing)."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn(171_000, tool_calls=("read_file",)))
    observed = an.observe_compaction(compaction(tokens_before=175_000, tokens_after=5_000))
    assert not observed.record.settled
    assert observed.record.tokens_after_reported == 5_000
    settling = an.observe_turn(turn(176_000))
    assert settling.settled is not None
    assert settling.settled.record.tokens_after == 176_000
    assert settling.settled.record.tokens_after_reported == 5_000
    assert [f.kind for f in settling.settled.findings] == [FindingKind.INEFFECTIVE_COMPACTION]
    assert an.compactions[-1].tokens_after == 176_000
    assert an.observe_turn(turn(177_000)).settled is None


def test_a_compaction_observed_with_its_size_after_is_settled_at_once() -> None:
    """Given the first call's context with the observation, every rule judges it at once."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn(171_000, tool_calls=("read_file",)))
    analysis = an.observe_compaction(compaction(tokens_before=175_000, context_after=176_000))
    assert analysis.record.settled
    assert analysis.flagged(FindingKind.INEFFECTIVE_COMPACTION)
    assert an.observe_turn(turn(176_000)).settled is None


def test_a_compaction_no_call_followed_is_judged_at_finish() -> None:
    """At the end of input, a compaction still waiting is judged with its size after unknown:
    the interval rules can still fire, the size rules cannot."""
    analyzer, _ = note_004_run([20, 15, 11])
    for _ in range(7):
        analyzer.observe_turn(turn(new_content_tokens=600))
    analyzer.observe_compaction(compaction(tokens_before=170_000))
    finished = analyzer.finish()
    assert finished is not None
    assert [f.rule for f in finished.findings] == ["cadence"]
    assert analyzer.finish() is None


def _early_compaction(turns_after: int) -> ConversationAnalyzer:
    """A conversation that compacts at turn 11 at 0.3 of its window, then makes
    ``turns_after`` more calls."""
    an = ConversationAnalyzer("c", Settings())
    for _ in range(10):
        an.observe_turn(turn(60_000))
    an.observe_compaction(compaction(tokens_before=60_000))
    for _ in range(turns_after):
        an.observe_turn(turn(20_000))
    return an


def test_a_short_run_is_judged_when_the_run_ends() -> None:
    """Nothing is said while the run goes on; at its end, a run of 15 turns that compacted at
    turn 11 with room left is flagged, once, on that compaction (hindsight)."""
    an = _early_compaction(5)
    assert an.turn_index == 15
    ended = an.end_run()
    assert ended is not None
    assert ended.hindsight
    assert ended.record.turn_index == 11
    (finding,) = ended.findings
    assert finding.kind is FindingKind.SHORT_RUN_COMPACTION
    assert "of a run that ended at turn 15" in finding.reason
    assert an.end_run() is None


def test_a_run_that_went_on_past_20_turns_is_no_short_run() -> None:
    """A compaction at turn 11 of a run that went on to 40 turns is not flagged,
    neither while it runs nor at its end (the registry's finish included)."""
    reg = ConversationRegistry(Settings())
    an = reg.get("c")
    for _ in range(10):
        an.observe_turn(turn(60_000))
    assert not an.observe_compaction(compaction(tokens_before=60_000)).findings
    for _ in range(29):
        an.observe_turn(turn(20_000))
    assert an.turn_index == 39
    assert [f for a in reg.finish() for f in a.findings] == []


def test_the_registry_finish_ends_every_run() -> None:
    """At the end of input the registry judges each run's end: a 15-turn run is flagged."""
    reg = ConversationRegistry(Settings())
    an = reg.get("c")
    for _ in range(10):
        an.observe_turn(turn(60_000))
    an.observe_compaction(compaction(tokens_before=60_000))
    for _ in range(5):
        an.observe_turn(turn(20_000))
    kinds = [f.kind for a in reg.finish() for f in a.findings]
    assert kinds == [FindingKind.SHORT_RUN_COMPACTION]


def test_compactions_and_known_summaries() -> None:
    """The analyzer keeps the records and recognises its summaries."""
    an = ConversationAnalyzer("c", Settings())
    summary = "## Goal\nfix the flaky test in the retry path of the scheduler service"
    first = an.observe_compaction(compaction(summary_text=summary)).record
    assert an.compactions == (first,)
    assert an.is_known_summary("Here is a summary of the conversation to date: " + summary) == (
        first.compaction_id
    )
    assert an.is_known_summary("unrelated text about something else entirely here") is None


def test_prune_compaction_clears_attention_decay() -> None:
    """After a prune, the pruned tool outputs no longer weigh in the attention decay."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn(tool_output_tokens=(50_000,)))
    an.observe_compaction(compaction(mode=CompactionMode.PRUNE))
    assert an.observe_turn(turn()).pressure.attention_decay == 0.0


def test_livelock_is_sticky_until_recovery() -> None:
    """Livelock holds between flagged compactions and clears when the cadence recovers."""
    analyzer, analyses = note_004_run(NOTE_004_INTERVALS)
    unflagged = analyses[8]
    assert not unflagged.findings
    assert analyzer.livelocked
    for _ in range(8):
        analyzer.observe_turn(turn(new_content_tokens=600))
    analyzer.observe_compaction(compaction(tokens_after=60_000))
    analyzer.observe_turn(turn(60_000))  # settles it: not flagged, a longer interval
    assert not analyzer.livelocked


def test_livelock_clears_on_lineage_reset() -> None:
    """A compaction that starts a fresh lineage (the remedy) clears the livelock state."""
    analyzer, analyses = note_004_run([20, 15, 11, 8])  # ends on the cadence finding
    assert analyses[-1].findings[0].rule == "cadence"
    for _ in range(7):  # with the run's last turn: the same interval, no recovery
        analyzer.observe_turn(turn(new_content_tokens=600))
    chained = analyzer.observe_compaction(compaction())
    settled = analyzer.observe_turn(turn(new_content_tokens=600)).settled
    assert settled is not None
    assert not (*chained.findings, *settled.findings)
    assert chained.record.parent_id is not None
    assert analyzer.livelocked
    for _ in range(7):
        analyzer.observe_turn(turn(new_content_tokens=600))
    reset = analyzer.observe_compaction(compaction(continues_lineage=False))
    settled = analyzer.observe_turn(turn(new_content_tokens=600)).settled
    assert settled is not None
    assert not (*reset.findings, *settled.findings)
    assert not analyzer.livelocked


def test_registry_is_lru_bounded() -> None:
    """Beyond max_conversations the least recently used conversation is dropped."""
    reg = ConversationRegistry(Settings(max_conversations=3))
    for cid in ("a", "b", "c"):
        reg.get(cid)
    reg.get("a")  # a is now the most recent
    reg.get("d")
    assert len(reg) == 3
    assert reg.ids() == ["c", "a", "d"]
    assert "b" not in reg
    assert reg.peek("b") is None


def test_registry_get_returns_the_same_analyzer() -> None:
    """get() creates once, then returns the same analyzer."""
    reg = ConversationRegistry(Settings())
    assert reg.get("x") is reg.get("x")


def test_registry_expires_idle_conversations() -> None:
    """Conversations idle longer than conversation_idle_seconds are expired; active ones stay."""
    clock = FakeClock()
    reg = ConversationRegistry(Settings(conversation_idle_seconds=60), clock=clock)
    idle, active = reg.get("idle"), reg.get("active")
    clock.now += 50
    active.observe_turn(turn())
    clock.now += 20
    assert reg.expire() == ["idle"]
    assert reg.ids() == ["active"]
    assert idle.observe_turn(turn()).turn_index == 1  # a detached analyzer still works


def test_registry_expires_lazily_on_get() -> None:
    """Creating a conversation drops idle ones at the LRU end without a full scan."""
    clock = FakeClock()
    reg = ConversationRegistry(Settings(conversation_idle_seconds=60), clock=clock)
    reg.get("old")
    clock.now += 61
    reg.get("new")
    assert reg.ids() == ["new"]


def test_listeners_get_findings_and_errors_are_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    """Each finding reaches every listener; a listener that raises is logged, not propagated."""
    reg = ConversationRegistry(Settings())
    seen: list[Finding] = []

    def broken(finding: Finding) -> None:
        raise RuntimeError("listener bug")

    reg.add_listener(broken)
    reg.add_listener(seen.append)
    with caplog.at_level(logging.ERROR):
        reg.get("c").observe_compaction(compaction(turn_index=3, tokens_before=30_000))
        analysis = reg.get("c").end_run()
    assert analysis is not None
    assert [f.kind for f in seen] == [FindingKind.SHORT_RUN_COMPACTION]
    assert seen == list(analysis.findings)
    assert "listener" in caplog.text
    reg.remove_listener(seen.append)
    reg.get("d").observe_compaction(compaction(turn_index=3, tokens_before=30_000))
    reg.get("d").end_run()
    assert len(seen) == 1


def test_livelocked_count() -> None:
    """The registry counts the conversations currently in livelock."""
    reg = ConversationRegistry(Settings())
    note_004_run(NOTE_004_INTERVALS, registry=reg)
    reg.get("healthy").observe_turn(turn())
    assert reg.livelocked_count() == 1


def test_threads_share_the_registry_safely() -> None:
    """Many threads observing shared and own conversations lose no turn and raise nothing."""
    reg = ConversationRegistry(Settings(max_conversations=50))
    errors: list[BaseException] = []
    per_thread = 200

    def work(n: int) -> None:
        try:
            for i in range(per_thread):
                reg.get("shared").observe_turn(turn(1_000 * (i % 150), tool_calls=("read_file",)))
                own = reg.get(f"t{n}")
                own.observe_turn(turn(new_content_tokens=100))
                if i % 40 == 39:
                    own.observe_compaction(compaction(summary_text=f"## Goal\nthread {n} step {i}"))
                    reg.livelocked_count()
        except BaseException as exc:  # collected and re-checked on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert reg.get("shared").turn_index == 8 * per_thread
    assert all(len(reg.get(f"t{n}").compactions) == 5 for n in range(8))


def test_a_compaction_no_call_followed_is_judged_when_the_next_one_comes() -> None:
    """Two compactions with no call between (Claude Code's events): the first is judged,
    its size after unknown, when the second arrives, and comes back with it."""
    an = ConversationAnalyzer("c", Settings())
    for _ in range(3):
        an.observe_turn(turn(100_000))
    first = an.observe_compaction(compaction(tokens_before=100_000))
    second = an.observe_compaction(compaction(tokens_before=100_000))
    assert not first.record.settled
    assert second.settled is not None
    assert second.settled.record.compaction_id == first.record.compaction_id


STRANDS_SUMMARY = """## Conversation Summary
* Topic 1: the user asked why test_parse_dates fails
* Next step: fix the timezone handling in parse() and rerun the suite

## Tools Executed
* run_tests: 1 failed, AssertionError: expected 00:00Z, got 23:00Z
"""


def test_a_framework_summary_is_judged_only_against_its_own_template() -> None:
    """Strands' summary (its own headings, none of the five fields asked) draws
    no schema finding, and its span says which template it was judged against; pinned to
    the five fields, it is judged on them."""
    an = ConversationAnalyzer("c", Settings())
    for _ in range(25):
        an.observe_turn(turn(150_000))
    analysis = an.observe_compaction(compaction(summary_text=STRANDS_SUMMARY))
    assert analysis.record.summary_template == "strands"
    assert not analysis.flagged(FindingKind.SUMMARY_SCHEMA_COVERAGE)
    assert compaction_attributes(analysis)[sc.SUMMARY_TEMPLATE] == "strands"
    assert sc.SUMMARY_SCHEMA_COVERAGE not in compaction_attributes(analysis)
    pinned = ConversationAnalyzer("p", Settings(schema_template="pinned"))
    for _ in range(25):
        pinned.observe_turn(turn(150_000))
    judged = pinned.observe_compaction(compaction(summary_text=STRANDS_SUMMARY))
    (finding,) = [f for f in judged.findings if f.kind is FindingKind.SUMMARY_SCHEMA_COVERAGE]
    assert "covers 2 of the 5 preserve-schema fields pinned in the summarizer's prompt" in (
        finding.reason
    )


def test_a_summary_of_no_known_template_says_so() -> None:
    """A summary under headings no known summarizer uses is not judged: its template is
    ``unknown`` on the span, where the coverage would be."""
    an = ConversationAnalyzer("c", Settings())
    an.observe_turn(turn(150_000))
    analysis = an.observe_compaction(compaction(summary_text="## Context\nx\n## Focus\ny\n"))
    assert compaction_attributes(analysis)[sc.SUMMARY_TEMPLATE] == "unknown"
    assert not analysis.flagged(FindingKind.SUMMARY_SCHEMA_COVERAGE)
