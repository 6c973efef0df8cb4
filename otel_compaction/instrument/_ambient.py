"""What the host process gives the pure history tracker: the clock, a lock, the
conversations each thread or asyncio task placed last, and ids unique across processes.

``inference.history`` reads none of these itself (it stays deterministic and free of
ambient state); the runtime builds the process's tracker here.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar

from otel_compaction.inference.history import HistoryTracker

_ids = itertools.count(1)


def _prefix() -> str:
    return f"conv-{os.getpid():x}-{int(time.time()) & 0xFFFFFF:06x}-"


_PREFIX = _prefix()


def _forked() -> None:
    """A forked child mints under a prefix of its own (its pid), not its parent's."""
    global _PREFIX
    _PREFIX = _prefix()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_forked)


def new_conversation_id() -> str:
    """An id for an inferred conversation, unique across processes: the process id and
    the time of start make the prefix (two agents exporting to one backend never share a
    conversation), a counter the rest (the same process never mints one twice)."""
    return f"{_PREFIX}{next(_ids)}"


def process_tracker(
    idle_seconds: float, max_chars: int, at_pressure: Callable[[str, int], bool]
) -> HistoryTracker:
    """The process's history tracker: monotonic clock, one lock, each thread's and
    asyncio task's own last placed conversations (a context variable: a task starts with
    its parent's), and process-unique ids."""
    return HistoryTracker(
        idle_seconds=idle_seconds,
        max_chars=max_chars,
        clock=time.monotonic,
        at_pressure=at_pressure,
        lock=threading.Lock(),
        recent=ContextVar("otel_compaction_recent", default=()),
        new_id=new_conversation_id,
    )
