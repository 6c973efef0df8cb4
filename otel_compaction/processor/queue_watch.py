"""A forwarding queue that cannot be written (a full disk): said once, probed, findings held.

The pipeline reports each write the queue refused (``failed``) and each that
worked (``writable``); the first failure of an episode is logged with what the
receivers now answer, and so is its end. While it lasts, ``probe_if_due`` tries
a small write every ``PROBE_EVERY_SECONDS`` (no request may come to try one),
and finding spans that could not be queued are ``hold``-en in memory, up to
``MAX_HELD_FINDINGS`` (beyond, the oldest are dropped and counted).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

from otel_compaction.processor.queue import PersistentQueue, QueueUnwritable
from otel_compaction.processor.tap import FindingContext

logger = logging.getLogger("otel_compaction.processor.pipeline")

PROBE_EVERY_SECONDS = 1.0
"""How often an unwritable queue is tried again when no request comes to try it."""
MAX_HELD_FINDINGS = 10_000
"""Finding spans kept in memory while the queue cannot be written (the oldest go beyond)."""


class QueueWatch:
    """Tracks one queue's write failures (not thread-safe: callers hold the pipeline's locks).

    Args:
        queue: the persistent forwarding queue.
        clock: monotonic seconds.
        on_dropped: told how many held finding spans were dropped.
    """

    def __init__(
        self, queue: PersistentQueue, clock: Callable[[], float], on_dropped: Callable[[int], None]
    ) -> None:
        self._queue = queue
        self._clock = clock
        self._on_dropped = on_dropped
        self.failing = False
        self._next_probe = 0.0
        self._held: deque[FindingContext] = deque()

    def failed(self, exc: QueueUnwritable) -> None:
        """A write was refused; the first of an episode is logged."""
        if not self.failing:
            self.failing = True
            logger.error(
                "forwarding queue %s cannot be written (%s): requests are refused with "
                "503 / UNAVAILABLE and a retry delay until it can",
                self._queue.directory, exc,
            )  # fmt: skip

    def writable(self) -> None:
        """A write worked; the end of an episode is logged."""
        if self.failing:
            self.failing = False
            logger.warning("forwarding queue writable again: accepting requests")

    def probe_if_due(self) -> None:
        """While failing, try a small write once every ``PROBE_EVERY_SECONDS``."""
        if self.failing and self._clock() >= self._next_probe:
            self._next_probe = self._clock() + PROBE_EVERY_SECONDS
            if self._queue.probe():
                self.writable()

    def hold(self, findings: list[FindingContext]) -> None:
        """Keep finding spans for a later tick; beyond ``MAX_HELD_FINDINGS`` the oldest go."""
        self._held.extend(findings)
        over = len(self._held) - MAX_HELD_FINDINGS
        if over > 0:
            for _ in range(over):
                self._held.popleft()
            logger.error("forwarding queue unwritable: %d finding spans dropped", over)
            self._on_dropped(over)

    def take_held(self) -> list[FindingContext]:
        """The finding spans held so far (and none held any more)."""
        held = list(self._held)
        self._held.clear()
        return held

    def holds(self) -> bool:
        """Whether finding spans wait to be queued again."""
        return bool(self._held)
