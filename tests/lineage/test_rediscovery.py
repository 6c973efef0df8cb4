"""Rediscovery: repeated tool calls after a compaction, against the conversation's baseline."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.lineage.rediscovery import (
    RediscoveryTracker,
    call_key,
    key_text,
    late_key_text,
    parse_key_text,
    resolve_keys,
)
from otel_compaction.model import (
    CompactionObservation,
    Rediscovery,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource


def read(path: str) -> tuple[str, str]:
    """A Read call of ``path``."""
    return "Read", json.dumps({"file_path": path})


def edit(path: str) -> tuple[str, str]:
    """An Edit call of ``path``."""
    return "Edit", json.dumps({"file_path": path, "old_string": "a", "new_string": "b"})


class Run:
    """Feeds a tracker turn by turn: each turn's calls, and the last turn's results."""

    def __init__(self, horizon: int = 5) -> None:
        self.tracker = RediscoveryTracker(horizon)
        self.turn = 0
        self.closed: list[Rediscovery] = []
        self._results: list[int] = []

    def call(self, *calls: tuple[str, str | None], result_tokens: int = 100) -> None:
        """One turn making ``calls``, whose results (``result_tokens`` each) come next turn."""
        self.turn += 1
        names = tuple(c[0] for c in calls)
        keys = resolve_keys(names, tuple(c[1] for c in calls))
        self.closed += self.tracker.observe_turn(self.turn, names, keys, tuple(self._results))
        self._results = [result_tokens] * len(calls)

    def compact(self, compaction_id: str = "c1") -> None:
        """A compaction before the next turn."""
        self.tracker.observe_compaction(compaction_id, self.turn + 1)

    def end(self) -> list[Rediscovery]:
        """The end of the conversation: what every horizon measured."""
        self.closed += self.tracker.finish(self.turn)
        return self.closed


def test_repeats_after_a_compaction_count_with_their_result_tokens() -> None:
    """Two files read before the compaction and again after it: 2 calls, their results' tokens."""
    run = Run()
    run.call(read("a.py"))
    run.call(read("b.py"))
    run.compact()
    run.call(read("a.py"), read("b.py"), result_tokens=700)
    run.call(read("c.py"))
    (result,) = run.end()
    assert (result.compaction_id, result.start_turn) == ("c1", 3)
    assert (result.calls, result.tokens, result.turns) == (2, 1400, 1)
    assert result.tools == ("Read",)


def test_a_control_that_repeats_nothing_measures_zero() -> None:
    """New calls after a compaction are not rediscovery."""
    run = Run()
    run.call(read("a.py"))
    run.compact()
    run.call(read("b.py"))
    run.call(read("c.py"))
    (result,) = run.end()
    assert (result.calls, result.tokens, result.turns) == (0, 0, 0)


def test_a_read_after_an_edit_since_the_compaction_is_not_rediscovery() -> None:
    """Reading a file again after editing it after the compaction checks the edit: not counted."""
    run = Run()
    run.call(read("a.py"))
    run.compact()
    run.call(edit("a.py"))
    run.call(read("a.py"))
    (result,) = run.end()
    assert result.calls == 0


def test_an_edit_before_the_compaction_does_not_excuse_a_reread() -> None:
    """A file read and edited before the compaction, read again after it, was forgotten."""
    run = Run()
    run.call(read("a.py"))
    run.call(edit("a.py"))
    run.compact()
    run.call(read("a.py"))
    (result,) = run.end()
    assert result.calls == 1


def test_a_habit_repeated_before_the_compaction_is_not_rediscovery() -> None:
    """A status command the agent repeats anyway (twice before the point) does not count."""
    status = ("Bash", json.dumps({"command": "git status"}))
    run = Run()
    run.call(status)
    run.call(status)
    run.compact()
    run.call(status)
    (result,) = run.end()
    assert result.calls == 0


def test_a_key_repeated_twice_in_one_horizon_counts_once() -> None:
    """The second re-read of the same file within one horizon is not counted again."""
    run = Run()
    run.call(read("a.py"))
    run.compact()
    run.call(read("a.py"))
    run.call(read("a.py"))
    (result,) = run.end()
    assert (result.calls, result.turns) == (1, 1)


def test_calls_after_the_horizon_are_not_counted() -> None:
    """A repeat made after the horizon's last turn belongs to no compaction."""
    run = Run(horizon=2)
    run.call(read("a.py"))
    run.compact()
    run.call(read("x.py"))
    run.call(read("y.py"))
    run.call(read("a.py"))
    (result,) = run.end()
    assert (result.calls, result.horizon_turns) == (0, 2)


def test_the_next_compaction_cuts_a_horizon_short_and_its_last_results_still_count() -> None:
    """A horizon the next compaction ends still gets its last calls' results on the next turn."""
    run = Run(horizon=10)
    run.call(read("a.py"))
    run.compact("c1")
    run.call(read("a.py"), result_tokens=300)
    run.compact("c2")
    run.call(read("z.py"))
    first, second = run.end()
    assert (first.compaction_id, first.calls, first.tokens, first.horizon_turns) == (
        "c1",
        1,
        300,
        1,
    )
    assert (second.compaction_id, second.calls) == ("c2", 0)


def test_calls_of_unknown_input_are_never_counted() -> None:
    """A call known only by its name matches nothing."""
    run = Run()
    run.call(("Read", None))
    run.compact()
    run.call(("Read", None))
    (result,) = run.end()
    assert result.calls == 0


def test_the_baseline_is_measured_at_ordinary_points() -> None:
    """Turns that are multiples of the horizon with no compaction near give the baseline."""
    run = Run(horizon=3)
    run.call(read("a.py"))
    run.call(read("b.py"))
    run.call(read("c.py"))  # turn 3: a baseline point
    run.call(read("a.py"))
    run.call(read("d.py"))
    run.call(read("e.py"))  # turn 6: the point's horizon closes, the next opens
    assert run.end() == []
    baseline = run.tracker.baseline
    assert (baseline.points, baseline.calls, baseline.tokens) == (1, 1, 100)
    assert baseline.mean_tokens == 100.0


def test_a_baseline_horizon_a_compaction_falls_into_is_dropped() -> None:
    """A compaction inside a baseline horizon leaves no baseline point."""
    run = Run(horizon=3)
    for name in ("a", "b", "c", "a"):
        run.call(read(name))
    run.compact()
    run.call(read("b"))
    run.end()
    assert run.tracker.baseline.points == 0


def test_call_keys_are_stable_and_canonical() -> None:
    """The key hashes the canonical input: key order does not matter, the value is fixed."""
    one = call_key("Read", '{"file_path": "a.py", "limit": 10}')
    two = call_key("Read", '{"limit":10,"file_path":"a.py"}')
    assert one == two
    assert one[1] is not None
    assert call_key("Read", "a.py")[1] is None  # no JSON object: no path


def test_call_keys_do_not_depend_on_the_process() -> None:
    """The key of a call is a fixed value (BLAKE2b), the same in every process."""
    key, path = call_key("Bash", json.dumps({"command": "ls"}))
    assert f"{key:016x}" == "ae3b4728585df087"  # BLAKE2b-64 of 'Bash\\0{"command":"ls"}'
    assert path is None


calls = st.lists(
    st.tuples(
        st.sampled_from(["Read", "Edit", "Bash"]),
        st.sampled_from(['{"file_path":"a"}', '{"file_path":"b"}', '{"command":"x"}', None]),
    ),
    max_size=3,
)
steps = st.lists(st.one_of(st.just("compact"), calls), max_size=40)


@settings(max_examples=200, deadline=None)
@given(steps=steps, horizon=st.integers(1, 6))
def test_rediscovery_is_never_negative_nor_counts_calls_outside_its_horizon(
    steps: list[object], horizon: int
) -> None:
    """Every figure is non-negative, and no horizon counts more calls than it covered."""
    run = Run(horizon)
    made: dict[int, int] = {}
    for step in steps:
        if step == "compact":
            run.compact(f"c{run.turn}")
            continue
        assert isinstance(step, list)
        run.call(*step)
        made[run.turn] = len(step)
    for result in run.end():
        covered = sum(
            n
            for t, n in made.items()
            if result.start_turn <= t < result.start_turn + result.horizon_turns
        )
        assert 0 <= result.calls <= covered
        assert result.tokens >= 0
        assert 0 <= result.turns <= result.horizon_turns <= horizon


_EVERY_CALL = (
    ("Read", '{"file_path":"a"}'),
    ("Read", '{"file_path":"b"}'),
    ("Bash", '{"command":"x"}'),
)


def _measure(steps: list[object], horizon: int, cut: int | None = None) -> list[Rediscovery]:
    """The results of ``steps``; from turn ``cut`` on, every turn repeats every call."""
    run = Run(horizon)
    for step in steps:
        if step == "compact":
            run.compact(f"c{run.turn}")
            continue
        assert isinstance(step, list)
        late = cut is not None and run.turn + 1 >= cut
        run.call(*(_EVERY_CALL if late else step))
    return run.end()


@settings(max_examples=200, deadline=None)
@given(steps=steps, horizon=st.integers(1, 6), cut=st.integers(1, 40))
def test_calls_after_a_horizon_never_change_what_it_measured(
    steps: list[object], horizon: int, cut: int
) -> None:
    """A horizon that ended by turn ``cut`` measures the same whatever the calls from then on
    (here: all repeats), so no call after its own horizon is ever counted."""

    def ended(results: list[Rediscovery]) -> list[Rediscovery]:
        done = [r for r in results if r.start_turn + r.horizon_turns <= cut]
        return sorted(done, key=lambda r: (r.start_turn, r.compaction_id or ""))

    assert ended(_measure(steps, horizon, cut)) == ended(_measure(steps, horizon))


class LateRun(Run):
    """Feeds each turn's calls with the next turn, late-marked, with their results (as an
    agent's own log events give them)."""

    def __init__(self, horizon: int = 5) -> None:
        super().__init__(horizon)
        self._last: tuple[tuple[str, str | None], ...] = ()

    def call(self, *calls: tuple[str, str | None], result_tokens: int = 100) -> None:
        """One turn; the calls of the turn before it come with it."""
        self.turn += 1
        names = tuple(c[0] for c in self._last)
        texts = tuple(late_key_text(n, a) for n, a in self._last)
        keys = resolve_keys(names, (), texts)
        tokens = tuple(result_tokens for _ in self._last)
        self.closed += self.tracker.observe_turn(self.turn, names, keys, tokens)
        self._last = calls


@settings(max_examples=200, deadline=None)
@given(steps=steps, horizon=st.integers(1, 6))
def test_calls_learnt_one_turn_late_measure_what_calls_on_time_measure(
    steps: list[object], horizon: int
) -> None:
    """A source that learns each response's calls with the next request (late key texts)
    measures every horizon and the baseline as a source that knows them on time."""
    runs: list[Run] = [Run(horizon), LateRun(horizon)]
    for run in runs:
        for step in [*steps, []]:
            if step == "compact":
                run.compact(f"c{run.turn}")
                continue
            assert isinstance(step, list)
            run.call(*step)
    on_time, late = runs
    assert late.end() == on_time.end()
    assert late.tracker.baseline == on_time.tracker.baseline


def test_the_last_calls_before_a_compaction_learnt_late_are_calls_before_it() -> None:
    """Calls of the response just before a compaction, learnt with the first request after
    it, are re-read work when repeated after it, and never rediscovery themselves."""
    run = LateRun(horizon=5)
    run.call(read("a"))
    run.call(read("b"))  # brings read a; read b is learnt next turn, after the compaction
    run.compact("c1")
    run.call(read("a"))  # brings read b (before c1): a repeat of nothing after the point
    run.call()  # brings read a: made before c1, so redone
    run.call(read("b"))
    run.call()
    (result,) = run.end()
    assert (result.calls, result.tokens) == (2, 200)


def _turn(*calls: tuple[str, str | None], outputs: tuple[int, ...] = ()) -> TurnObservation:
    return TurnObservation(
        context_tokens=1000,
        model="claude-sonnet-4-5",
        tool_calls=tuple(c[0] for c in calls),
        tool_arguments=tuple(c[1] for c in calls),
        tool_output_tokens=outputs,
    )


def test_the_analyzer_reports_rediscovery_on_the_turn_that_closes_the_horizon() -> None:
    """Through the engine: the horizon's figures arrive in ``TurnAnalysis.rediscovered``."""
    analyzer = ConversationAnalyzer("conv", Settings(rediscovery_horizon=2))
    analyzer.observe_turn(_turn(read("a.py")))
    compaction = analyzer.observe_compaction(
        CompactionObservation(
            source=CompactionSource.EXPLICIT, mode=CompactionMode.LOSSY, tokens_before=1000
        )
    )
    analyzer.observe_turn(_turn(read("a.py"), outputs=(50,)))
    analyzer.observe_turn(_turn(outputs=(400,)))
    closing = analyzer.observe_turn(_turn())
    (result,) = closing.rediscovered
    assert result.compaction_id == compaction.record.compaction_id
    assert (result.calls, result.tokens, result.start_turn) == (1, 400, 2)
    assert analyzer.finish_rediscovery() == ()


def test_an_analyzer_without_tool_inputs_keeps_no_rediscovery_state() -> None:
    """Calls known by name only (spans without inputs) leave the tracker unmade."""
    analyzer = ConversationAnalyzer("conv", Settings())
    analyzer.observe_turn(_turn(("Read", None)))
    assert analyzer.rediscovery_baseline is None


def test_key_texts_carry_the_same_keys_as_the_inputs() -> None:
    """A span's key texts resolve to the keys the inputs give, so every path measures alike."""
    calls = ("Read", "Bash", "Read")
    args = ('{"file_path": "a.py"}', '{"command": "ls"}', None)
    texts = tuple(key_text(n, a) or "" for n, a in zip(calls, args, strict=True))
    assert texts[2] == ""
    assert ":" in texts[0]
    assert ":" not in texts[1]
    assert resolve_keys(calls, (), texts) == resolve_keys(calls, args)
    assert parse_key_text("not-hex") is None


def test_memory_keeps_the_most_recent_keys_within_its_bound() -> None:
    """Past MAX_KEYS distinct calls the oldest is forgotten, and the store stays in bytes."""
    from otel_compaction.lineage.rediscovery import MAX_KEYS

    run = Run(horizon=10_000)
    for i in range(MAX_KEYS + 5):
        run.call(read(f"f{i}.py"))
    run.compact()
    run.call(read("f0.py"), read(f"f{MAX_KEYS + 4}.py"))
    (result,) = run.end()
    assert result.calls == 1  # f0 was forgotten; the newest is remembered
    keys = run.tracker._keys
    assert len(keys.keys) == MAX_KEYS
    assert keys.keys.itemsize + keys.first.itemsize + keys.second.itemsize == 16


def test_advice_only_when_a_horizon_redid_more_than_the_baseline() -> None:
    """The advice names the redone tools above the baseline, and says nothing at or below it."""
    from otel_compaction.emit.attributes import rediscovery_advice

    redone = Rediscovery(3, "c1", calls=2, tokens=900, turns=2, horizon_turns=20, tools=("Read",))
    assert rediscovery_advice(redone, None) is not None
    assert "Read" in (rediscovery_advice(redone, 100.0) or "")
    assert rediscovery_advice(redone, 900.0) is None
    nothing = Rediscovery(3, "c1", calls=0, tokens=0, turns=0, horizon_turns=20)
    assert rediscovery_advice(nothing, None) is None
