"""The one rule by which a foreign number becomes a count (of tokens, calls, turns).

SDK responses, OTLP attributes, Claude Code's events and transcripts, Codex's rollouts
and LiteLLM's model table all hand us numbers we did not type; every reader coerces them
with :func:`as_count`, so a value counts, or not, the same way wherever it arrives.
"""

from __future__ import annotations

import math
from typing import Final

COUNT_MAX: Final = 2**63 - 1
"""The largest count: what OTLP's int64 holds (a larger one could never be written back)."""


def as_count(value: object) -> int | None:
    """``value`` as a count, a whole number in ``0..COUNT_MAX``, or None when it is none.

    - an int is itself; a bool is no number (``True`` is not one token);
    - a float counts when finite, truncated toward zero (``12.9`` is 12: a JSON or OTLP
      double standing for an integer);
    - a string counts when it is ASCII decimal digits, white space around them ignored
      (``" 12"`` is 12; ``"12.5"``, ``"1e3"``, ``"-3"``, ``"¹"`` are not);
    - anything else, a negative number, NaN, an infinity or more than ``COUNT_MAX``: None.
    """
    if type(value) is int:  # the common case first: an SDK's usage field
        number = value
    elif value is None or isinstance(value, bool):  # None next: a usage field left out
        return None
    elif isinstance(value, int):
        number = int(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            return None
        number = int(text)
    else:
        return None
    return number if 0 <= number <= COUNT_MAX else None
