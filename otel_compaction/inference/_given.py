"""What the host process gives the history tracker, and what it uses when given none.

The tracker (``inference.history``) reads no clock, lock, context variable, process id
or time of day: the instrumentation gives it the process's (``instrument._ambient``).
Alone, it uses these: one list of the conversations last placed (one thread), numbered
ids, no clock.
"""

from __future__ import annotations

from typing import Protocol

RECENT_PLACED = 8
"""Conversations remembered per thread or asyncio task as candidates of a whole-history
replacement (the most recently placed last)."""


class RecentPlaces(Protocol):
    """Where the conversations last placed by the caller's thread or task are kept (the
    most recent last): a ``ContextVar`` in the host process, :class:`LastPlaced` alone."""

    def get(self) -> tuple[str, ...]:
        """The conversations last placed, the most recent last."""
        ...

    def set(self, value: tuple[str, ...], /) -> object:
        """Keep ``value`` as the conversations last placed."""
        ...


class LastPlaced:
    """The conversations last placed, for a tracker used by one thread (the default)."""

    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: tuple[str, ...] = ()

    def get(self) -> tuple[str, ...]:
        """The conversations last placed, the most recent last."""
        return self._value

    def set(self, value: tuple[str, ...], /) -> object:
        """Keep ``value`` as the conversations last placed."""
        self._value = value
        return None


class Numbered:
    """New conversation ids ``conv-1``, ``conv-2``... of one tracker (the default: the
    same calls give the same ids; unique in one tracker only)."""

    __slots__ = ("_next",)

    def __init__(self) -> None:
        self._next = 0

    def __call__(self) -> str:
        self._next += 1
        return f"conv-{self._next}"


def placed_last(recent: tuple[str, ...], cid: str) -> tuple[str, ...] | None:
    """``recent`` with ``cid`` as the most recently placed (at most :data:`RECENT_PLACED`),
    or None when it is already."""
    if recent and recent[-1] == cid:
        return None
    kept = [c for c in recent if c != cid][-(RECENT_PLACED - 1) :]
    return (*kept, cid)


def no_clock() -> float:
    """The clock of a tracker given none: always 0, so nothing expires by idleness."""
    return 0.0
