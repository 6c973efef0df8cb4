"""Run-once flags: the one way the package does something exactly once, thread-safely.

:class:`Once` is a single flag (end a call once, stop a service once, warn once
per process); :class:`OncePerKey` is one flag per key for a bounded number of
keys (warn once per unknown model, per failing stage). Both are claimed with an
atomic test-and-set, so two threads racing for the same flag never both win.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable


class Once:
    """A flag that is claimed once: the first :meth:`claim` is True, every later one False."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        # A lock acquired and never released is an atomic test-and-set flag.
        self._lock = threading.Lock()

    def claim(self) -> bool:
        """True for the first caller only."""
        return self._lock.acquire(blocking=False)

    @property
    def claimed(self) -> bool:
        """Whether the flag was claimed."""
        return self._lock.locked()


class OncePerKey:
    """One :class:`Once` per key, for the first ``limit`` distinct keys (then none).

    Meant for warnings: each key is reported once, and past ``limit`` keys nothing
    more is remembered or reported, so neither memory nor the log grows without
    bound however many distinct keys arrive.
    """

    __slots__ = ("_keys", "_limit", "_lock")

    def __init__(self, limit: int | None = None) -> None:
        self._keys: set[Hashable] = set()
        self._limit = limit
        self._lock = threading.Lock()

    def claim(self, key: Hashable) -> bool:
        """True the first time ``key`` is claimed while fewer than ``limit`` keys are."""
        with self._lock:
            if key in self._keys or (self._limit is not None and len(self._keys) >= self._limit):
                return False
            self._keys.add(key)
            return True

    @property
    def full(self) -> bool:
        """Whether ``limit`` keys were claimed (no further key will be)."""
        with self._lock:
            return self._limit is not None and len(self._keys) >= self._limit

    def __len__(self) -> int:
        return len(self._keys)
