"""The state snapshot file: restored verdicts, bounds, atomic writes, and files it refuses."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_compaction.config import Settings
from otel_compaction.model import TurnObservation
from otel_compaction.otlp.extract import Item, ItemKind, spans_to_items
from otel_compaction.otlp.state import ConversationState, SkipListener
from otel_compaction.processor.config import ConfigError, load_config
from otel_compaction.processor.snapshot import FILE_NAME, SnapshotRejected, SnapshotStore
from otel_compaction.semconv import SnapshotReason
from tests.processor.golden import TESTDATA, read_requests

SETTINGS = Settings()


class Clock:
    """A clock the test moves by hand (monotonic and wall alike)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _items(name: str) -> list[Item]:
    items: list[Item] = []
    for _, request in read_requests(TESTDATA / f"{name}.traces.jsonl"):
        items.extend(spans_to_items(request, targets=False))
    return items


def _split(items: list[Item], compaction_id: str) -> tuple[list[Item], list[Item]]:
    """The items before the compaction ``compaction_id``, and from it on."""
    at = next(
        i
        for i, item in enumerate(items)
        if item.kind is ItemKind.COMPACTION
        and item.compaction is not None
        and item.compaction.compaction_id == compaction_id
    )
    return items[:at], items[at:]


def _findings(state: ConversationState, items: list[Item]) -> list[dict[str, Any]]:
    state.offer(items)
    applied = state.drain()
    found = [f.to_json() for a in applied if a.compaction for f in a.compaction.findings]
    found += [
        f.to_json() for a in applied if a.turn and a.turn.settled for f in a.turn.settled.findings
    ]
    # The oracle files are sorted (make_testdata): the same order here.
    return sorted(found, key=lambda d: json.dumps(d, sort_keys=True))


def _oracle(name: str) -> list[dict[str, Any]]:
    return list(json.loads((TESTDATA / f"{name}.findings.json").read_text()))


def _state(clock: Clock | None = None, on_skip: SkipListener | None = None) -> ConversationState:
    return ConversationState(SETTINGS, window=0.0, clock=clock or Clock(1_000.0), on_skip=on_skip)


def _store(tmp_path: Path, wall: Callable[[], float] | None = None, **kw: Any) -> SnapshotStore:
    return SnapshotStore(tmp_path / "state", SETTINGS, wall=wall or Clock(1.8e9), **kw)


def test_a_livelock_straddling_a_restart_is_flagged_as_without_the_restart(
    tmp_path: Path,
) -> None:
    """Snapshot before compaction c7, restored in a new state: c7-c9 get the oracle's findings."""
    before, after = _split(_items("livelock_004"), "conv-livelock_004-c7")
    first = _state()
    assert _findings(first, before) == []
    store = _store(tmp_path)
    assert store.save(first).conversations == 1
    second = _state()
    assert store.load(second) == 1
    assert _findings(second, after) == _oracle("livelock_004")
    # The control: a clean start forgets the cadence (it needs the earlier intervals), so it
    # flags no cadence livelock; only what the last compactions alone show (no progress).
    fresh = _findings(_state(), after)
    assert "cadence" not in {f["rule"] for f in fresh}
    assert "cadence" in {f["rule"] for f in _oracle("livelock_004")}


def test_turn_marks_order_and_idle_time_survive(tmp_path: Path) -> None:
    """Turn marks still refuse old turns; the LRU order and idle time (downtime too) hold."""
    clock, wall = Clock(1_000.0), Clock(1.8e9)
    first = _state(clock)
    before, _ = _split(_items("livelock_004"), "conv-livelock_004-c7")
    _findings(first, before)
    for cid in ("a", "b"):
        first.registry.get(cid).observe_turn(TurnObservation(1_000))
        clock.now += 10.0
    store = _store(tmp_path, wall)
    store.save(first)
    wall.now += 100.0  # the processor was down for 100 s
    skipped: list[str] = []
    second = _state(Clock(5.0), on_skip=lambda item, reason: skipped.append(reason.value))
    store.load(second)
    assert second.registry.ids() == first.registry.ids()
    idle = {a.conversation_id: idle for a, idle, _ in second.tracked()}
    assert idle == {a.conversation_id: idle + 100.0 for a, idle, _ in first.tracked()}
    late = [i for i in before if i.kind is ItemKind.TURN][-1:]
    late[0].dedupe_key += 1  # a retried span the dedupe memory does not know
    second.offer(late)
    assert second.drain() == []
    assert skipped == ["late"]


def test_conversations_idle_past_the_limit_are_not_restored(tmp_path: Path) -> None:
    """A conversation that would have expired by the time the snapshot is read stays out."""
    wall = Clock(1.8e9)
    first = _state()
    first.registry.get("idle").observe_turn(TurnObservation(1_000))
    store = _store(tmp_path, wall)
    store.save(first)
    wall.now += SETTINGS.conversation_idle_seconds + 1
    second = _state()
    assert store.load(second) == 0
    assert len(second.registry) == 0


def test_the_snapshot_keeps_the_most_recent_conversations_within_its_bounds(
    tmp_path: Path,
) -> None:
    """max_conversations and max_bytes drop the least recently active conversations first."""
    clock = Clock(1_000.0)
    state = _state(clock)
    for n in range(50):
        state.registry.get(f"c{n:02d}").observe_turn(TurnObservation(1_000 + n))
        clock.now += 1.0
    by_count = _store(tmp_path / "count", max_conversations=10)
    saved = by_count.save(state)
    assert (saved.conversations, saved.left_out) == (10, 40)
    restored = _state()
    by_count.load(restored)
    assert restored.registry.ids() == [f"c{n}" for n in range(40, 50)]
    by_size = _store(tmp_path / "size", max_bytes=8_192)
    saved = by_size.save(state)
    assert 0 < saved.conversations < 50
    assert saved.size <= 8_192
    assert by_size.path.stat().st_size == saved.size
    restored = _state()
    by_size.load(restored)
    assert restored.registry.ids() == [f"c{n}" for n in range(50 - saved.conversations, 50)]


def _saved_file(tmp_path: Path) -> tuple[SnapshotStore, bytes]:
    state = _state()
    before, _ = _split(_items("livelock_004"), "conv-livelock_004-c7")
    _findings(state, before)
    state.registry.get("other").observe_turn(TurnObservation(5_000))
    store = _store(tmp_path)
    store.save(state)
    return store, store.path.read_bytes()


def _refused(store: SnapshotStore, data: bytes) -> SnapshotReason:
    """Write ``data`` as the snapshot and load it: the reason it was refused."""
    store.path.write_bytes(data)
    state = _state()
    with pytest.raises(SnapshotRejected) as caught:
        store.load(state)
    assert len(state.registry) == 0  # a clean start: nothing from the file
    assert not store.path.exists()
    assert store.path.with_name(FILE_NAME + ".rejected").read_bytes() == data
    return caught.value.reason


def test_a_truncated_snapshot_is_refused_at_every_cut(tmp_path: Path) -> None:
    """A copy cut anywhere (mid-line or at a line end) is refused as truncated, never half used."""
    store, data = _saved_file(tmp_path)
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    cuts = sorted({0, 1, 10, ends[0] - 1, *ends[:-1], *(e + 5 for e in ends[:-1]), len(data) - 1})
    for cut in cuts:
        assert _refused(store, data[:cut]) is SnapshotReason.TRUNCATED, cut


def test_a_changed_byte_is_refused_as_corrupt(tmp_path: Path) -> None:
    """One digit changed in a conversation's line fails the checksum."""
    store, data = _saved_file(tmp_path)
    at = data.index(b'"mark":') + len(b'"mark":')
    changed = data[:at] + (b"9" if data[at : at + 1] != b"9" else b"8") + data[at + 1 :]
    assert _refused(store, changed) is SnapshotReason.CORRUPT


def _with_header(data: bytes, **fields: Any) -> bytes:
    """``data`` with header fields replaced (and the checksum made right again)."""
    lines = data.split(b"\n")
    header = {**json.loads(lines[0]), **fields}
    body = b"\n".join([json.dumps(header).encode(), *lines[1:-2]]) + b"\n"
    end = {"end": json.loads(lines[-2])["end"], "sha256": hashlib.sha256(body).hexdigest()}
    return body + json.dumps(end).encode() + b"\n"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"version": 2}, SnapshotReason.FOREIGN_VERSION),
        ({"engine": "0123456789abcdef"}, SnapshotReason.FOREIGN_VERSION),
        ({"settings": "0123456789abcdef"}, SnapshotReason.SETTINGS_CHANGED),
        ({"format": "something-else"}, SnapshotReason.CORRUPT),
        ({"conversations": 7}, SnapshotReason.CORRUPT),
    ],
)
def test_a_foreign_snapshot_is_refused_with_its_reason(
    tmp_path: Path, fields: dict[str, Any], reason: SnapshotReason
) -> None:
    """Another format version, engine layout or settings digest means a clean start."""
    store, data = _saved_file(tmp_path)
    assert _refused(store, _with_header(data, **fields)) is reason


def test_other_detector_settings_refuse_the_snapshot(tmp_path: Path) -> None:
    """A store with other thresholds reads an older snapshot as written under other settings."""
    store, data = _saved_file(tmp_path)
    other = SnapshotStore(store.path.parent, Settings(transition_veto=0.5))
    assert _refused(other, data) is SnapshotReason.SETTINGS_CHANGED


def test_a_snapshot_over_the_byte_limit_is_not_read(tmp_path: Path) -> None:
    """A file larger than max_bytes is refused before it is read."""
    store, data = _saved_file(tmp_path)
    small = SnapshotStore(store.path.parent, SETTINGS, max_bytes=len(data) - 1)
    assert _refused(small, data) is SnapshotReason.TOO_LARGE


def test_a_value_that_does_not_rebuild_is_refused_before_anything_is_adopted(
    tmp_path: Path,
) -> None:
    """A checksummed file whose phase belief has the wrong length is corrupt: nothing restored."""
    store, data = _saved_file(tmp_path)
    lines = data.split(b"\n")
    entry = json.loads(lines[2])
    belief = next(v for v in _walk(entry["state"]) if isinstance(v, dict) and "$b" in v)
    belief["$b"] = "AAAA"
    lines[2] = json.dumps(entry).encode()
    assert _refused(store, _with_header(b"\n".join(lines))) is SnapshotReason.CORRUPT


def _walk(value: Any) -> Any:
    yield value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in children:
            yield from _walk(child)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_no_damaged_file_crashes_the_load(tmp_path: Path, data: st.DataObject) -> None:
    """Random cuts, byte changes and garbage: load restores all or nothing and raises only
    SnapshotRejected."""
    store, good = _saved_file(tmp_path)
    damaged = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = data.draw(st.integers(0, 255))
    damaged = damaged[: data.draw(st.integers(0, len(damaged)))]
    damaged += data.draw(st.binary(max_size=20))
    store.path.write_bytes(bytes(damaged))
    state = _state()
    try:
        restored = store.load(state)
    except SnapshotRejected:
        restored = 0
    assert len(state.registry) == restored
    assert restored in (0, 2)


def test_a_failed_write_leaves_the_previous_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write failing before the rename keeps the last good file, and leaves no partial temp
    file holding the space a full disk lacks."""
    store, data = _saved_file(tmp_path)

    def no_space(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    state = _state()
    state.registry.get("newer").observe_turn(TurnObservation(1))
    with pytest.raises(OSError, match="No space"):
        store.save(state)
    monkeypatch.undo()
    assert store.path.read_bytes() == data
    assert not store.path.with_name(FILE_NAME + ".tmp").exists()
    restored = _state()
    assert store.load(restored) == 2


def test_the_state_directory_must_not_be_the_queue_directory(tmp_path: Path) -> None:
    """The queue takes every file in its directory for its own: the config refuses sharing it."""
    shared = str(tmp_path / "shared")
    overrides: dict[str, dict[str, Any]] = {
        "forward": {"endpoint": "127.0.0.1:4317", "queue": {"directory": shared}},
        "state": {"directory": shared},
    }
    with pytest.raises(ConfigError, match=r"state\.directory: must not be"):
        load_config(None, overrides)
    overrides["state"] = {"directory": str(tmp_path / "state")}
    assert load_config(None, overrides).state.directory == tmp_path / "state"
