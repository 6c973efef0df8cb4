"""Token pressure: how full the context is, and how much of it is recent tool output.

Two numbers, both fractions of the model's context window in [0, 1]:

* ``token_fraction = clip(context_tokens / window, 0, 1)``;
* ``attention_decay = clip(sum_{j=0}^{K-1} decay^j * size_{n-j} / window, 0, 1)``,
  where ``size_n`` is the newest tool output (in tokens) and ``size_{n-j}`` the
  one ``j`` outputs before it. ``K`` is ``Settings.attention_window`` (default 8)
  and ``decay`` is ``Settings.attention_decay`` (default 0.8).

Both are the causes of compaction (docs/concepts.md#boundary-compaction); see ``docs/signals.md``.
"""

from __future__ import annotations

import functools
import itertools
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeAlias

from otel_compaction.config import Settings
from otel_compaction.model import Pressure

Sizes: TypeAlias = "array[int] | tuple[int, ...]"
"""The remembered tool-output sizes: 64-bit integers, or a tuple when one does not fit."""


def token_fraction(context_tokens: float, window: float) -> float:
    """Context tokens as a fraction of the window, clipped to [0, 1].

    A window that is not positive (or not a number) gives 0.0: the fraction is
    unknown, and an unknown pressure must not look like a full context.
    """
    if not window > 0 or not context_tokens > 0:
        return 0.0
    return clip01(context_tokens / window)


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
    return clip01(total / window)


class PressureTracker:
    """Keeps the last K tool-output sizes of one conversation and reports its pressure.

    The sizes are kept as 32-bit integers (``array('i')``: 4 bytes a size where
    a tuple of ints takes 36; 64-bit when one needs it), or as a tuple when one
    does not fit; once K are kept, a turn's tool outputs are shifted into the array in place, whose
    allocation stays exactly K long (appending would over-allocate). An int
    subclass such as ``bool`` reads back as a plain ``int``. An idle conversation keeps
    about 100 bytes here (none before its first tool output), where a
    ``deque(maxlen=K)`` took about 760. The last pressure is kept as its
    inputs and rebuilt when asked for (:attr:`last`), not as an object.

    Not thread-safe: one tracker belongs to one conversation, whose analyzer
    serialises its turns.
    """

    __slots__ = ("_context_tokens", "_kept", "_sizes", "_weights", "_window")

    STATE_FIELDS: ClassVar = ("context_tokens", "kept", "sizes", "window")
    """The names of :meth:`state`'s values (the weights are derived from the settings)."""

    def __init__(self, settings: Settings) -> None:
        # decay**j for j < K, shared; K is its length.
        self._weights = _decay_weights(settings.attention_window, settings.attention_decay)
        self._sizes: Sizes = ()
        self._context_tokens: int | None = None
        self._window = 0
        self._kept: Pressure | None = None  # the last pressure, once clear() changed the sizes

    def observe(
        self, context_tokens: int, window: int, tool_output_tokens: Sequence[int] = ()
    ) -> Pressure:
        """Add this turn's tool outputs (oldest first) and return the pressure after it."""
        if tool_output_tokens:
            self._sizes = _appended(self._sizes, tool_output_tokens, len(self._weights))
        self._context_tokens, self._window, self._kept = context_tokens, window, None
        return self._pressure(context_tokens, window)

    @property
    def last(self) -> Pressure | None:
        """The pressure :meth:`observe` returned last (an equal copy); None before the first."""
        if self._kept is not None:
            return self._kept
        if self._context_tokens is None:
            return None
        return self._pressure(self._context_tokens, self._window)

    @property
    def context_tokens(self) -> int | None:
        """``last.context_tokens`` without building :attr:`last`; None before the first."""
        kept = self._kept
        return kept.context_tokens if kept is not None else self._context_tokens

    def _pressure(self, context_tokens: int, window: int) -> Pressure:
        # token_fraction and attention_decay (weights precomputed), inline: every turn
        # runs this. Both quotients are >= 0 here, so only the upper clip can apply.
        fraction = decay = 0.0
        if window > 0:
            if context_tokens > 0:
                fraction = min(1.0, context_tokens / window)
            if self._sizes:
                total = 0.0
                # At most K sizes are kept and there are K weights; zip stops at the shorter.
                for weight, size in zip(self._weights, reversed(self._sizes), strict=False):
                    if size > 0:
                        total += weight * size
                decay = min(1.0, total / window)
        return Pressure(context_tokens, window, fraction, decay)

    def clear(self) -> None:
        """Forget the remembered tool outputs (e.g. after a compaction pruned them).

        :attr:`last` still reports the pressure of the last turn, as observed.
        """
        if self._sizes:
            self._kept = self.last
        self._sizes = ()

    def state(self) -> dict[str, Any]:
        """What the tracker remembers, as plain values (a copy): :meth:`restore` takes it."""
        return {
            "context_tokens": self._context_tokens,
            "kept": self._kept,
            "sizes": self._sizes[:],
            "window": self._window,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take what :meth:`state` returned (of a tracker built with the same settings)."""
        context_tokens, kept, sizes, window = map(state.__getitem__, self.STATE_FIELDS)
        self._context_tokens, self._kept, self._sizes, self._window = (
            context_tokens, kept, sizes[:], window
        )  # fmt: skip

    @property
    def recent_tool_outputs(self) -> tuple[int, ...]:
        """The remembered tool-output sizes, oldest first (at most K)."""
        return tuple(self._sizes)


def _appended(sizes: Sizes, new: Sequence[int], k: int) -> Sizes:
    """The newest ``k`` of ``sizes`` followed by ``new``, packed as by :func:`_packed`.

    A full array takes ``new`` in place (the usual turn: no tuple, no new K-long array).
    """
    n = len(new)
    if isinstance(sizes, array) and len(sizes) == k and n <= k:
        try:
            tail = array(sizes.typecode, new)
        except (OverflowError, TypeError):
            pass
        else:
            sizes[: k - n] = sizes[n:]
            sizes[k - n :] = tail
            return sizes
    combined = (*sizes, *new)
    return _packed(combined[len(combined) - k :] if len(combined) > k else combined)


def _packed(sizes: tuple[int, ...]) -> Sizes:
    """``sizes`` as 32-bit integers (4 bytes a size: 40 bytes an idle conversation saves at
    K = 10), else 64-bit, or as given when one is not an int that fits."""
    for typecode in ("i", "q"):
        try:
            return array(typecode, sizes)
        except (OverflowError, TypeError):
            continue
    return sizes


@functools.lru_cache(maxsize=16)
def _decay_weights(k: int, decay: float) -> tuple[float, ...]:
    """``decay**j`` for j < k, by repeated multiplication as :func:`attention_decay` does."""
    weights = []
    weight = 1.0
    for _ in range(max(k, 0)):
        weights.append(weight)
        weight *= decay
    return tuple(weights)


def clip01(value: float) -> float:
    """``value`` clipped to [0, 1] (as ``min(1.0, max(0.0, value))``); NaN, -0.0 and anything
    not above 0 give 0.0."""
    return value if 0.0 < value < 1.0 else 1.0 if value >= 1.0 else 0.0
