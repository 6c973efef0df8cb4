"""Many conversations' analyzers: bounded (LRU), expiring when idle, thread-safe.

``ConversationRegistry`` is how every path holds its conversations: the
instrumentation's runtime, the processor's state and ``analyze``. It tells its
listeners about every finding. One analyzer per conversation id
(``engine.analyzer.ConversationAnalyzer``); the analyzers of one registry share
one ``AnalyzerSetup`` and a few striped locks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from otel_compaction._bounded import BoundedMap
from otel_compaction.config import Settings
from otel_compaction.detectors import DEFAULT_DETECTORS, Detector
from otel_compaction.engine.analyzer import (
    AnalyzerSetup,
    Clock,
    ConversationAnalyzer,
    FindingListener,
)
from otel_compaction.model import CompactionAnalysis, Finding

logger = logging.getLogger(__name__)

LOCK_STRIPES = 64
"""How many locks the analyzers of one registry share (by conversation id)."""


class ConversationRegistry:
    """Many conversations' analyzers: LRU-bounded, idle-expiring, thread-safe.

    Args:
        settings: thresholds; ``max_conversations`` bounds the registry and
            ``conversation_idle_seconds`` is the idle time before expiry.
        clock: seconds, monotonic (injectable for tests).
        detectors: the rules every analyzer runs.

    Listeners are called with every finding, on the thread that observed the
    compaction; a listener that raises is logged and the others still run.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: Clock = time.monotonic,
        detectors: Sequence[Detector] = DEFAULT_DETECTORS,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._clock = clock
        self._detectors = tuple(detectors)
        self._lock = threading.Lock()
        self._analyzers: BoundedMap[str, ConversationAnalyzer] = BoundedMap(
            self.settings.max_conversations
        )
        self._listeners: tuple[FindingListener, ...] = ()
        # One lock per stripe instead of one per analyzer (56 bytes each at
        # 100,000 conversations); an analyzer never takes another's lock, so
        # sharing cannot deadlock, and 64 stripes keep contention negligible.
        self._stripes = tuple(threading.Lock() for _ in range(LOCK_STRIPES))
        self._on_finding: FindingListener = self._dispatch  # one bound method for all
        self._setup = AnalyzerSetup.of(self.settings, self._detectors, clock, self._on_finding)

    def get(self, conversation_id: str) -> ConversationAnalyzer:
        """The conversation's analyzer, created on first use (evicting the least recent)."""
        with self._lock:
            analyzer = self._analyzers.get(conversation_id)
            if analyzer is not None:
                analyzer.last_seen = self._clock()
                return analyzer
            self._expire_head()
            analyzer = ConversationAnalyzer(
                conversation_id,
                lock=self._stripes[hash(conversation_id) % LOCK_STRIPES],
                setup=self._setup,
            )
            self._analyzers.put(conversation_id, analyzer)
            return analyzer

    def peek(self, conversation_id: str) -> ConversationAnalyzer | None:
        """The conversation's analyzer if it is tracked, without creating or touching it."""
        with self._lock:
            return self._analyzers.peek(conversation_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._analyzers)

    def __contains__(self, conversation_id: object) -> bool:
        with self._lock:
            return conversation_id in self._analyzers

    def ids(self) -> list[str]:
        """The tracked conversation ids, least recently used first."""
        with self._lock:
            return self._analyzers.keys()

    def expire(self) -> list[str]:
        """Drop every conversation idle for longer than the limit; return their ids."""
        limit = self._clock() - self.settings.conversation_idle_seconds
        with self._lock:
            expired = [cid for cid, a in self._analyzers.items() if a.last_seen < limit]
            for cid in expired:
                self._analyzers.pop(cid)
        return expired

    def _expire_head(self) -> None:
        """Drop idle conversations from the LRU end (cheap, amortised; lock held)."""
        limit = self._clock() - self.settings.conversation_idle_seconds
        while (entry := self._analyzers.oldest()) is not None:
            cid, oldest = entry
            if oldest.last_seen >= limit:
                return
            self._analyzers.pop(cid)

    def finish(self) -> list[CompactionAnalysis]:
        """:meth:`ConversationAnalyzer.finish`, then :meth:`ConversationAnalyzer.end_run`, of
        every tracked conversation (the end of input: every run has ended)."""
        with self._lock:
            analyzers = self._analyzers.values()
        ends = (step() for a in analyzers for step in (a.finish, a.end_run))
        return [found for found in ends if found is not None]

    def livelocked_count(self) -> int:
        """How many tracked conversations are currently in re-expansion livelock."""
        with self._lock:
            return sum(1 for a in self._analyzers.values() if a.livelocked)

    def add_listener(self, listener: FindingListener) -> None:
        """Call ``listener(finding)`` for every finding from now on."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: FindingListener) -> None:
        """Stop calling ``listener`` (no error when it was not registered)."""
        with self._lock:
            self._listeners = tuple(x for x in self._listeners if x != listener)

    def _dispatch(self, finding: Finding) -> None:
        for listener in self._listeners:
            try:
                listener(finding)
            except Exception:  # a listener's bug must not break the observed agent
                logger.exception("finding listener %r failed; continuing", listener)
