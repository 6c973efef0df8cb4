"""Known limits: why an outcome of a class is below 100% today, one sentence each.

Keyed by ``(class, outcome)``; ``"*"`` as the class covers every class. The benchmark
attaches the reason to every cell below 100% in docs/detection.md, and the CI test
fails on a miss of its sampled runs that has no reason here. When the engine fixes
one, delete its entry: the cell reaches 100% and the doc stops naming it.
"""

from __future__ import annotations

KNOWN_LIMITS: dict[tuple[str, str], str] = {}

UNEXPLAINED = "(no known limit recorded: investigate)"


def reason_for(name: str, outcome: str) -> str:
    """The recorded reason for ``outcome`` of class ``name``, or :data:`UNEXPLAINED`."""
    return KNOWN_LIMITS.get((name, outcome)) or KNOWN_LIMITS.get(("*", outcome)) or UNEXPLAINED
