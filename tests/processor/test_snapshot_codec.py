"""The engine-state codec: a restored analyzer answers exactly as the original would."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.lineage.rediscovery import RediscoveryTracker
from otel_compaction.lineage.tracker import LineageTracker
from otel_compaction.model import CompactionObservation, PhaseReport, Pressure, TurnObservation
from otel_compaction.processor import snapshot_codec as codec
from otel_compaction.semconv import CompactionMode, CompactionSource
from otel_compaction.signals.phase import PhaseTracker
from otel_compaction.signals.pressure import PressureTracker
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


DERIVED: dict[type, set[str]] = {
    ConversationAnalyzer: {
        "_flags", "_lock", "_setup", "conversation_id", "last_seen", "mark", "mark_ns",
    },
    PressureTracker: {"_weights"},
    PhaseTracker: {"_tables", "_categorize", "_rules"},
    LineageTracker: {"_settings", "_conversation_id", "_history"},  # _history: a memo
    RediscoveryTracker: set(),
}  # fmt: skip
"""The slots each state class's constructor rebuilds (the id, idle clock and turn mark are the
line's own fields)."""


FLAGS: dict[type, set[str]] = {
    ConversationAnalyzer: {"compacted_pending", "judged_ineffective", "livelocked", "phase_known"}
}
"""State values kept as bits of the ``_flags`` slot."""


def _slots(cls: type) -> set[str]:
    return {s for klass in cls.__mro__ for s in klass.__dict__.get("__slots__", ())}


@pytest.mark.parametrize("cls", codec.STATE_CLASSES, ids=lambda c: c.__name__)
def test_every_slot_of_a_state_class_is_in_its_state_or_derived(cls: type) -> None:
    """A state class's slots are its ``STATE_FIELDS`` (as ``name`` or ``_name``) and the ones
    its constructor derives: a new slot left out of ``state()`` fails here."""
    fields = set(cls.STATE_FIELDS) - FLAGS.get(cls, set())  # type: ignore[attr-defined]
    kept = {slot for slot in _slots(cls) if slot.lstrip("_") in fields}
    assert {slot.lstrip("_") for slot in kept} == fields
    assert kept | DERIVED[cls] == _slots(cls)


def test_state_returns_exactly_the_state_fields() -> None:
    """``state()`` of an analyzer that used every tracker names exactly ``STATE_FIELDS``, its
    trackers' states theirs."""
    analyzer = ConversationAnalyzer("conv", SETTINGS)
    analyzer.observe_turn(TurnObservation(1_000, tool_calls=("bash",), tool_arguments=("ls",)))
    state = analyzer.state()
    assert tuple(sorted(state)) == ConversationAnalyzer.STATE_FIELDS
    nested = {"lineage": LineageTracker, "phase_tracker": PhaseTracker,
              "pressure_tracker": PressureTracker, "rediscovery": RediscoveryTracker}  # fmt: skip
    for name, cls in nested.items():
        assert tuple(sorted(state[name])) == cls.STATE_FIELDS  # type: ignore[attr-defined]


def test_the_engine_digest_changes_when_a_tracker_gains_a_state_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot of another engine layout cannot be mistaken for this one's."""
    before = codec.engine_digest()
    assert codec.engine_digest() == before
    monkeypatch.setattr(PressureTracker, "STATE_FIELDS", (*PressureTracker.STATE_FIELDS, "new"))
    assert codec.engine_digest() != before


_OWN_DUNDERS = {"__name__", "__module__", "__qualname__", "__getitem__"}


def test_the_codec_reads_and_writes_no_private_attribute() -> None:
    """``snapshot_codec.py`` names no ``_private`` attribute of any object, imports no private
    name, and never sets, deletes or lists an object's attributes: the engine's state goes
    through its public ``state()``/``restore()``."""
    tree = ast.parse(Path(codec.__file__).read_text(encoding="utf-8"))
    offenders = [found for node in ast.walk(tree) if (found := _private_use(node))]
    assert not offenders


def _private_use(node: ast.AST) -> str | None:
    """What ``node`` does with another object's private parts, if anything."""
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        return None if node.attr in _OWN_DUNDERS else f"line {node.lineno}: .{node.attr}"
    if isinstance(node, ast.ImportFrom):
        private = [a.name for a in node.names if a.name.startswith("_")]
        return f"line {node.lineno}: import {private}" if private else None
    calls = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if calls and node.func.id in {"setattr", "delattr", "vars"}:  # type: ignore[attr-defined]
        return f"line {node.lineno}: {node.func.id}()"  # type: ignore[attr-defined]
    return None


def test_the_value_classes_have_only_public_fields() -> None:
    """The dataclasses the codec rebuilds from their fields (it reads them by name) have no
    private field."""
    for cls in codec.VALUE_CLASSES:
        assert not [f.name for f in dataclasses.fields(cls) if f.name.startswith("_")], cls


@pytest.mark.parametrize(
    "raw",
    [
        {"$o": "os.system", "v": []},
        {"$o": "ConversationAnalyzer", "v": [1]},
        {"$d": [["turn_index", 1]]},
        [1],
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
