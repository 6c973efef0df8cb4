"""The engine-state codec: a restored analyzer answers exactly as the original would."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.analyzer import ConversationAnalyzer
from otel_compaction.config import Settings
from otel_compaction.model import CompactionObservation, PhaseReport, Pressure, TurnObservation
from otel_compaction.processor import snapshot_codec as codec
from otel_compaction.semconv import CompactionMode, CompactionSource
from otel_compaction.signals.tools import ToolCategory

SETTINGS = Settings()
PHASES = SETTINGS.phases
TOOLS = ("read_file", "grep", "edit_file", "run_tests", "bash", "str_replace_based_edit_tool")
ARGUMENTS = (None, '{"command": "pytest -q"}', '{"command": "ls"}', '{"command": "view"}')
WORDS = ("goal", "plan", "decisions", "open_errors", "next_action", "retry", "loop", "patch")


def _text(seed: int, words: int) -> str:
    """A deterministic text of ``words`` words (long ones give truncated sketches)."""
    return " ".join(
        f"{WORDS[(seed * 7 + i * 3) % len(WORDS)]}{(seed + i) % 97}" for i in range(words)
    )


TEXTS = [_text(seed, n) for seed, n in ((1, 40), (2, 40), (3, 300), (4, 1_500), (5, 8))]
# Summaries that carry earlier ones over (summary of a summary).
SUMMARIES = [*TEXTS, TEXTS[0] + " " + TEXTS[1], TEXTS[2] + " next_action: rerun", ""]

sizes = st.integers(min_value=0, max_value=400_000)
maybe_size = st.none() | sizes

turns = st.builds(
    TurnObservation,
    context_tokens=sizes,
    model=st.sampled_from([None, "claude-sonnet-4-5", "gpt-5", "no-such-model"]),
    new_content_tokens=st.integers(min_value=-100, max_value=30_000),
    # 2**70 does not fit the pressure tracker's int64 array: it falls back to a tuple.
    tool_output_tokens=st.lists(st.integers(0, 60_000) | st.just(2**70), max_size=4).map(tuple),
    tool_calls=st.lists(st.sampled_from(TOOLS), max_size=3).map(tuple),
    window=st.none() | st.integers(min_value=1, max_value=2_000_000),
    tool_arguments=st.lists(st.sampled_from(ARGUMENTS), max_size=3).map(tuple),
    tool_categories=st.lists(st.sampled_from([c.value for c in ToolCategory]), max_size=3).map(
        tuple
    ),
)
distributions = st.dictionaries(
    st.sampled_from([*PHASES, "elsewhere"]), st.floats(0.0, 1.0), max_size=len(PHASES) + 1
)
reports = st.builds(
    PhaseReport,
    name=st.sampled_from([*PHASES, "unknown-phase"]),
    confidence=st.none() | st.floats(0.0, 1.0),
    distribution=st.none() | distributions,
)
compactions = st.builds(
    CompactionObservation,
    source=st.sampled_from(list(CompactionSource)),
    mode=st.sampled_from(list(CompactionMode)),
    trigger=st.sampled_from([None, "auto", "manual"]),
    tokens_before=maybe_size,
    tokens_after=maybe_size,
    summary_tokens=maybe_size,
    retained_tail_tokens=maybe_size,
    summary_text=st.none() | st.sampled_from(SUMMARIES),
    compacted_texts=st.lists(st.sampled_from(SUMMARIES), max_size=2).map(tuple),
    retained_texts=st.lists(st.sampled_from(TEXTS), max_size=2).map(tuple),
    parent_id=st.sampled_from([None, None, None, "c1", "c3", "elsewhere"]),
    continues_lineage=st.sampled_from([None, True, False]),
    failed=st.booleans(),
    turn_index=st.none() | st.integers(min_value=1, max_value=400),
)
operations = st.lists(st.one_of(turns, turns, reports, compactions), max_size=40)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def _numbered(ops: list[Any], start: int) -> list[Any]:
    """The operations with compaction ids ``c<start>``, ``c<start+1>``... (some left None)."""
    out = []
    for n, op in enumerate(ops, start):
        if isinstance(op, CompactionObservation) and n % 5:
            op = CompactionObservation(**{**_fields(op), "compaction_id": f"c{n}"})
        out.append(op)
    return out


def _fields(obs: CompactionObservation) -> dict[str, Any]:
    return {name: getattr(obs, name) for name in obs.__dataclass_fields__}


def _run(analyzer: ConversationAnalyzer, op: Any) -> str:
    """Apply one operation; everything observable afterwards, as exact text."""
    if isinstance(op, TurnObservation):
        result: Any = analyzer.observe_turn(op)
    elif isinstance(op, PhaseReport):
        result = analyzer.report_phase(op)
    else:
        result = analyzer.observe_compaction(op)
    seen = (analyzer.pressure, analyzer.phase, analyzer.livelocked, analyzer.phase_turns)
    return repr((result, seen, analyzer.turn_index, analyzer.compactions, analyzer.last_seen))


def _restored(original: ConversationAnalyzer, clock: Clock) -> ConversationAnalyzer:
    """A fresh analyzer given the original's state through JSON text."""
    raw = json.loads(json.dumps(codec.encode_analyzer(original), allow_nan=False))
    restored = ConversationAnalyzer(original.conversation_id, SETTINGS, clock=clock)
    codec.apply_state(restored, codec.decode_state(raw))
    restored.last_seen = original.last_seen
    return restored


@settings(max_examples=300, deadline=None)
@given(operations, operations)
def test_a_restored_analyzer_gives_the_same_outputs_as_the_original(
    before: list[Any], after: list[Any]
) -> None:
    """For any turns, reports and compactions after a snapshot, both analyzers say the same."""
    clock = Clock()
    original = ConversationAnalyzer("conv", SETTINGS, clock=clock)
    for op in _numbered(before, 1):
        _run(original, op)
    restored = _restored(original, clock)
    assert codec.encode_analyzer(restored) == codec.encode_analyzer(original)
    for op in _numbered(after, len(before) + 1):
        if isinstance(op, CompactionObservation) and op.compaction_id is None:
            op = CompactionObservation(**{**_fields(op), "compaction_id": "generated"})
        clock.now += 1.0
        assert _run(restored, op) == _run(original, op)
    assert codec.encode_analyzer(restored) == codec.encode_analyzer(original)


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner).map(tuple) | st.lists(inner)
    | st.frozensets(st.integers()) | st.frozensets(st.text())
    | st.dictionaries(st.text(), inner) | st.sampled_from(list(CompactionMode)),
    max_leaves=20,
))  # fmt: skip
def test_every_listed_value_comes_back_identical(value: Any) -> None:
    """None, numbers (NaN and infinities too), text, bytes, containers and enums round-trip."""
    raw = json.loads(json.dumps(codec.encode(value), allow_nan=False))
    back = codec.decode(raw)
    assert type(back) is type(value)
    assert codec.encode(back) == codec.encode(value)
    if "nan" not in repr(value):  # NaN is never equal to itself; its encoding was compared
        assert back == value


@pytest.mark.parametrize(
    "value",
    [object(), (1, (object(),)), Pressure(cast("int", object()), 200_000, 0.0, 0.0)],
    ids=["alone", "in-tuples", "in-a-listed-class"],
)
def test_an_unlisted_type_is_refused_by_name(value: object) -> None:
    """A value of a type the codec does not know fails loudly, naming the type, however deep
    in a listed value (a tracker slot holding a new kind of value is one)."""
    with pytest.raises(codec.SnapshotError, match=r"builtins\.object"):
        codec.encode(value)


def test_derived_slots_name_real_slots_and_the_rest_are_kept() -> None:
    """Every slot of a listed engine class is either kept or rebuilt by its constructor."""
    for cls, derived in codec.ENGINE_OBJECTS.items():
        slots = {s for klass in cls.__mro__ for s in klass.__dict__.get("__slots__", ())}
        assert derived <= slots, (cls.__name__, derived - slots)
        assert set(codec.state_slots(cls)) == slots - derived


def test_the_engine_digest_changes_when_a_tracker_gains_a_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot of another engine layout cannot be mistaken for this one's."""
    before = codec.engine_digest()
    assert codec.engine_digest() == before
    name = "PressureTracker"
    cls, slots = codec._OBJECTS[name]
    monkeypatch.setitem(codec._OBJECTS, name, (cls, (*slots, "_new_field")))
    assert codec.engine_digest() != before


@pytest.mark.parametrize(
    "raw",
    [
        {"$o": "os.system", "v": []},
        {"$o": "ConversationAnalyzer", "v": [1]},
        {"$x": 1},
        {"$f": "1e3"},
        {"$b": "not base64!"},
        {"$q": "AAA"},
        {"$e": "CompactionMode", "v": "no-such-mode"},
        {"$a": "q", "v": ["x"]},
        "not an analyzer",
    ],
)
def test_bad_state_json_is_refused_not_executed(raw: Any) -> None:
    """An unknown class, tag or malformed value raises SnapshotError; nothing is imported or run."""
    with pytest.raises(codec.SnapshotError):
        codec.decode_state(raw)
