"""Token pressure: how full the context is, and how much of it is recent tool output.

Two numbers, both fractions of the model's context window in [0, 1]:

* ``token_fraction = clip(context_tokens / window, 0, 1)``;
* ``attention_decay = clip(sum_{j=0}^{K-1} decay^j * size_{n-j} / window, 0, 1)``,
  where ``size_n`` is the newest tool output (in tokens) and ``size_{n-j}`` the
  one ``j`` outputs before it. ``K`` is ``Settings.attention_window`` (default 8)
  and ``decay`` is ``Settings.attention_decay`` (default 0.8).

Source note 000 names both as the causes of compaction; see ``docs/signals.md``.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Sequence

from otel_compaction.config import Settings
from otel_compaction.model import Pressure


def token_fraction(context_tokens: float, window: float) -> float:
    """Context tokens as a fraction of the window, clipped to [0, 1].

    A window that is not positive (or not a number) gives 0.0: the fraction is
    unknown, and an unknown pressure must not look like a full context.
    """
    if not window > 0 or not context_tokens > 0:
        return 0.0
    return _clip01(context_tokens / window)


def attention_decay(
    tool_output_sizes_newest_last: Sequence[float], window: float, k: int, decay: float
) -> float:
    """Recency-decayed sum of the last ``k`` tool-output sizes, as a fraction of ``window``.

    Args:
        tool_output_sizes_newest_last: tool-output sizes in tokens, oldest first.
        window: the model's context window in tokens.
        k: how many of the newest outputs count.
        decay: the weight ratio per step back (the newest output has weight 1).

    Returns:
        ``sum_{j<k} decay**j * size_(newest-j) / window``, clipped to [0, 1];
        0.0 when the window is not positive. Negative sizes count as 0.
    """
    if not window > 0 or k <= 0:
        return 0.0
    total = 0.0
    weight = 1.0
    for size in itertools.islice(reversed(tool_output_sizes_newest_last), k):
        if size > 0:
            total += weight * size
        weight *= decay
    return _clip01(total / window)


class PressureTracker:
    """Keeps the last K tool-output sizes of one conversation and reports its pressure.

    Not thread-safe: one tracker belongs to one conversation, whose analyzer
    serialises its turns.
    """

    __slots__ = ("_decay", "_k", "_sizes")

    def __init__(self, settings: Settings) -> None:
        self._k = settings.attention_window
        self._decay = settings.attention_decay
        self._sizes: deque[int] = deque(maxlen=self._k)

    def observe(
        self, context_tokens: int, window: int, tool_output_tokens: Sequence[int] = ()
    ) -> Pressure:
        """Add this turn's tool outputs (oldest first) and return the pressure after it."""
        self._sizes.extend(tool_output_tokens)
        return Pressure(
            context_tokens=context_tokens,
            window=window,
            token_fraction=token_fraction(context_tokens, window),
            attention_decay=attention_decay(self._sizes, window, self._k, self._decay),
        )

    def clear(self) -> None:
        """Forget the remembered tool outputs (e.g. after a compaction pruned them)."""
        self._sizes.clear()

    @property
    def recent_tool_outputs(self) -> tuple[int, ...]:
        """The remembered tool-output sizes, oldest first (at most K)."""
        return tuple(self._sizes)


def _clip01(value: float) -> float:
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))
