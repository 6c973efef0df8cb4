"""What the instrumentation gives the history tracker: ids unique across processes, each
thread's own recent conversations."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from otel_compaction.instrument import _ambient

ROOT = Path(__file__).resolve().parents[2]


def _minted_in_a_process() -> str:
    code = "from otel_compaction.instrument._ambient import new_conversation_id as n; print(n())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_two_processes_never_mint_the_same_id() -> None:
    """The first id of two processes differs (their pids make the prefix), so conversations
    of two agents exporting to one backend stay apart."""
    first, second = _minted_in_a_process(), _minted_in_a_process()
    assert first.endswith("-1")
    assert second.endswith("-1")
    assert first != second


def test_a_forked_child_mints_under_its_own_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a fork the child's ids carry its pid, not the parent's (whose counter it
    inherited)."""
    monkeypatch.setattr(_ambient, "_PREFIX", _ambient._PREFIX)
    monkeypatch.setattr(os, "getpid", lambda: 0xABCDE)
    _ambient._forked()
    assert _ambient.new_conversation_id().startswith("conv-abcde-")


def test_each_thread_places_in_its_own_recent_conversations() -> None:
    """A conversation placed in one thread is among that thread's recent ones only."""
    tracker = _ambient.process_tracker(3600.0, 1_000_000, lambda cid, tokens: False)
    seen: dict[str, tuple[str, ...]] = {}

    def run(name: str) -> None:
        placed = tracker.place(None, name, [{"role": "user", "content": f"task of {name}"}])
        seen[name] = (placed.conversation_id, *tracker._recent.get())

    for name in ("one", "two"):
        worker = threading.Thread(target=run, args=(name,))
        worker.start()
        worker.join()
    assert seen["one"][1:] == (seen["one"][0],)
    assert seen["two"][1:] == (seen["two"][0],)
    assert tracker._recent.get() == ()
