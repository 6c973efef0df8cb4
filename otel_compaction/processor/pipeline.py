"""The processor's core: accepted requests → per-conversation state → outputs.

Receivers call ``submit`` on their own threads; it extracts the engine inputs,
admits the request or pushes back (``Overloaded``: the reorder window or the
forwarding queue is full), and writes the request to the persistent queue
before answering, so an accepted request survives a crash (tap mode writes
only requests with engine inputs, and deletes the file once they are applied).
One pipeline thread calls ``step`` every tick: it applies the conversations
whose reorder window closed, records metrics, logs and emits findings, and in
enrich mode releases the processed requests to the queue, in the order they
were accepted; a large step goes in rounds that finish the oldest requests
first (``rounds``), so they leave while the rest is applied. What it does with
the engine's results is ``results``; the requests it holds until they are
released, ``batches``.

In enrich mode a request is written ahead as it was received, and most
requests leave as they came: only one in which the processor changed a span's
flags is written again, with just those spans re-encoded
(``spanview.splice_spans``).

Nothing one request holds can stop the forwarding: an item the processor
fails on (reading it, analysing it, writing its flags) is logged, counted as
``analysis_error`` and passes through without a verdict; a batch whose output
cannot be built leaves as it was received.

A queue that cannot be written (a full disk) loses nothing either: a request
that cannot be written ahead is refused with :class:`Unavailable` (the
receivers answer 503 / ``UNAVAILABLE`` with a retry delay, which every OTLP
sender retries), counted as ``queue_unwritable``; finding spans wait in memory
(bounded) and a processed batch whose new bytes cannot be written leaves as it
was received (a rename needs no space), so the queue never blocks on its own
head. The first failure is logged, and so is the recovery; ``queue_error``
(``/healthz``) says why meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.agent_tools import AgentTools
from otel_compaction.otlp.decode import DecodeError, Signal, item_count, parse_protobuf
from otel_compaction.otlp.extract import Item, span_items
from otel_compaction.otlp.state import Applied, ConversationState
from otel_compaction.processor import heap
from otel_compaction.processor.batches import Batch, Batches, request_order
from otel_compaction.processor.config import ProcessorConfig
from otel_compaction.processor.queue import PersistentQueue, QueueUnwritable
from otel_compaction.processor.queue_watch import QueueWatch
from otel_compaction.processor.results import Results
from otel_compaction.processor.rounds import rounds
from otel_compaction.processor.tap import FindingContext
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger(__name__)

EXPIRE_EVERY_SECONDS = 1.0
STUCK_AFTER_SECONDS = 60.0
"""A batch held this long past its reorder window makes ``/healthz`` report a stuck queue."""
UNWRITABLE_RETRY_SECONDS = 5
"""The retry delay a sender is told while the queue cannot be written."""


class Overloaded(Exception):
    """The processor cannot take this request now; retry after ``retry_after`` seconds."""

    cause = ProcessorReason.OVERLOADED

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Unavailable(Overloaded):
    """The forwarding queue cannot be written (a full disk): retry later (503, ``UNAVAILABLE``)."""

    cause = ProcessorReason.QUEUE_UNWRITABLE


class Pipeline:
    """Admission, the conversation state, and the outputs of both modes.

    Args:
        config: the processor configuration.
        metrics: where counters go (None in unit tests that do not look).
        queue: the persistent forwarding queue (None: nothing is forwarded).
        findings_out: where findings are logged as JSON lines (None: not logged).
        clock: monotonic seconds (injectable).
    """

    def __init__(
        self,
        config: ProcessorConfig,
        *,
        metrics: ProcessorMetrics | None = None,
        queue: PersistentQueue | None = None,
        findings_out: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.settings = config.settings()
        self.enrich = config.output.mode == "enrich"
        self._metrics = metrics
        self.queue = queue
        self.state = ConversationState(
            self.settings,
            window=config.processing.reorder_window_seconds,
            dedupe_memory=config.processing.dedupe_memory,
            clock=clock,
            on_skip=self._skipped,
        )
        self._clock = clock
        self._lock = threading.Lock()
        self._next_expiry = clock() + EXPIRE_EVERY_SECONDS
        self._trim_every = config.processing.trim_memory_seconds
        self._next_trim = clock() + self._trim_every
        self._retry_after = max(1, round(config.processing.reorder_window_seconds + 0.5))
        # The agents' tool events, held for the next turn of their conversation (rediscovery).
        self._agent_tools = AgentTools(self.settings.max_conversations)
        self._watch = None if queue is None else QueueWatch(queue, clock, self._dropped_unwritable)
        self._batches = None if queue is None or self._watch is None else Batches(
            queue, enrich=self.enrich, metrics=metrics, watch=self._watch,
            count_failed=self._count_failed,
        )  # fmt: skip
        self._results = Results(
            self.state, config.output.service_name, enrich=self.enrich, metrics=metrics,
            queue=queue, watch=self._watch, findings_out=findings_out,
        )  # fmt: skip

    @property
    def metrics(self) -> ProcessorMetrics | None:
        """Where counters go (the service sets them once its meter is ready)."""
        return self._metrics

    @metrics.setter
    def metrics(self, metrics: ProcessorMetrics | None) -> None:
        self._metrics = metrics
        self._results.metrics = metrics
        if self._batches is not None:
            self._batches.metrics = metrics

    # ----------------------------------------------------------------- input

    def submit(
        self, signal: Signal, request: Any, transport: str, data: bytes | None = None
    ) -> int:
        """Accept one decoded request (raises ``Overloaded``); returns its item count.

        ``data`` is the protobuf the request was parsed from, when it came as
        protobuf (None: it is serialised where needed).
        """
        count = item_count(signal, request)
        items = self._extract_or_none(signal, request, data, count)
        # Written ahead in both modes, so a crash loses no accepted item; in tap
        # mode only requests with engine inputs, and the file goes once applied.
        queue = self.queue if self.enrich or items else None
        if queue is not None and data is None:
            data = request.SerializeToString()
        with self._lock:
            self._admit(len(items), len(data) if queue is not None and data is not None else 0)
            if queue is not None and data is not None:
                seq = self._write_ahead(queue, signal, data, count)
                kept = request if self.enrich else None  # tap sends no request on
                batch = Batch(seq, signal, kept, count, len(items), self._clock())
                self._track(batch, items)
            self.state.offer(items)
        if self.metrics is not None:
            self.metrics.received(signal, transport, count)
        return count

    def _extract_or_none(
        self, signal: Signal, request: Any, data: bytes | None, count: int
    ) -> list[Item]:
        """``_extract``, or no items when reading the request fails (it passes through)."""
        try:
            return self._extract(signal, request, data)
        except Exception:  # one request must not stop the receiver; logged and counted
            logger.exception("cannot read the engine inputs of a %s request", signal.spec.name)
            self._count_failed(signal, count)
            return []

    def _extract(self, signal: Signal, request: Any, data: bytes | None = None) -> list[Item]:
        """The request's engine inputs; ``data`` is the request serialised, if at hand."""
        # Only enrich mode writes back on the spans; without targets, the
        # request can be freed while its items wait in the reorder window.
        if signal is Signal.TRACES:
            # The same reading as ``otel-compaction analyze`` on a trace file.
            windows = self.settings.model_windows
            return span_items(request, windows, data=data, targets=self.enrich)
        if signal is Signal.LOGS:
            items = list(logs_to_items(request, self._agent_tools))
            if not self.enrich:
                for item in items:
                    item.target = None
            return items
        return []

    def _write_ahead(self, queue: PersistentQueue, signal: Signal, data: bytes, count: int) -> int:
        """Write the request ahead; ``Unavailable`` (retry later) when the disk refuses it."""
        assert self._watch is not None
        try:
            seq = queue.put(signal, data, count, ready=False)
        except QueueUnwritable as exc:
            self._watch.failed(exc)
            raise Unavailable(
                f"the forwarding queue cannot be written: {exc}", UNWRITABLE_RETRY_SECONDS
            ) from None
        self._watch.writable()
        return seq

    def queue_error(self) -> str | None:
        """Why the forwarding queue cannot be written now (None: it can)."""
        return self.queue.write_error if self.queue is not None else None

    def _admit(self, items: int, size: int) -> None:
        limit = self.config.processing.max_pending_items
        if items and self.state.pending + items > limit:
            raise Overloaded(f"reorder window holds {self.state.pending} items", self._retry_after)
        if self.queue is not None and size and not self.queue.has_room(size):
            raise Overloaded("forwarding queue is full", self._retry_after)

    def _track(self, batch: Batch, items: list[Item]) -> None:
        assert self._batches is not None  # a batch is written ahead: there is a queue
        self._batches.track(batch, items)

    def recover(self) -> int:
        """Process again the raw batches a previous run left in the queue; return how many."""
        if self.queue is None:
            return 0
        entries = self.queue.raw_entries()
        for entry, data in entries:
            try:
                request = parse_protobuf(entry.signal, data)
            except DecodeError as exc:  # a damaged file must not fail every start
                logger.error("queued batch %d is unreadable (%s); forwarded as is", entry.seq, exc)
                self._count_failed(entry.signal, entry.items)
                self.queue.complete(entry.seq, None, entry.items)
                continue
            items = self._extract_or_none(entry.signal, request, data, entry.items)
            kept = request if self.enrich else None
            batch = Batch(entry.seq, entry.signal, kept, entry.items, len(items), self._clock())
            with self._lock:
                self._track(batch, items)
                self.state.offer(items)
        return len(entries)

    # ------------------------------------------------------------ processing

    def step(self) -> int:
        """Apply what is due and emit the results; return how many items were applied."""
        with self._lock:
            groups = self.state.take_due()
        if self.enrich and self._batches:
            # The oldest requests leave first, while the rest of the step is applied.
            parts = rounds(groups, request_order)  # its lists are in turn order
            applied = sum(self._process(part, ordered=True) for part in parts)
        else:
            applied = self._process(groups)
        watch = self._watch
        if watch is not None:
            watch.probe_if_due()
            if watch.holds() and not watch.failing:
                self._results.emit([])
        now = self._clock()
        if now >= self._next_expiry:
            self._next_expiry = now + EXPIRE_EVERY_SECONDS
            self.state.expire()
        if self._trim_every and now >= self._next_trim:
            self._next_trim = now + self._trim_every
            heap.release()
        return applied

    def drain(self) -> int:
        """Apply everything held, whatever its window (shutdown); return the item count."""
        with self._lock:
            groups = self.state.take_all()
        return self._process(groups)

    def _process(self, groups: list[tuple[str, list[Item]]], ordered: bool = False) -> int:
        if not groups and not self._batches:
            return 0
        applied = self._apply(groups, ordered)
        findings: list[FindingContext] = []
        late: list[FindingContext] = []
        quiet = self.metrics is None
        results = self._results
        for result in applied:
            settled = result.turn.settled if result.turn is not None else None
            if result.compaction is not None and result.compaction.settled is not None:
                settled = result.compaction.settled
            redone = result.turn is not None and bool(result.turn.rediscovered)
            if quiet and result.compaction is None and settled is None and not redone:
                continue  # a turn: nothing to record without metrics
            try:
                if settled is not None:
                    results.settled(settled, result.item, late)
                if not quiet or result.compaction is not None or redone:
                    results.record(result, findings)
            except Exception:  # the item passes through without a verdict
                logger.exception("cannot record the analysis of a span of %s",
                                 result.item.conversation_id)  # fmt: skip
                self._skipped(result.item, ProcessorReason.ANALYSIS_ERROR)
        if self.metrics is not None:
            self.metrics.flush_turns()  # the step's turns, in bulk
        if findings and not self.enrich:
            results.emit(findings)
        if late or results.rediscovering:
            # Found after the compaction's span went on: spans in both modes.
            results.emit(late, results.take_rediscoveries())
        if self._batches:
            self._batches.release(groups)
        return len(applied)

    def _apply(self, groups: list[tuple[str, list[Item]]], ordered: bool = False) -> list[Applied]:
        try:
            return self.state.apply(groups, ordered)
        except Exception:  # the engine catches its own errors per item; this is a last guard
            logger.exception("cannot apply %d conversations", len(groups))
            for _, items in groups:
                for item in items:
                    self._skipped(item, ProcessorReason.ANALYSIS_ERROR)
            return []

    def _dropped_unwritable(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.dropped(ProcessorReason.QUEUE_UNWRITABLE, count)

    def unreleased_keys(self) -> list[int]:
        """The de-duplication keys of items already taken whose batch is still written ahead
        (not released): a restart replays that batch, and the snapshot must know them."""
        return [key for batch in self._batches or () for key in batch.taken]

    def oldest_batch_seconds(self) -> float:
        """How long the oldest batch not yet released has been held (0: none is held)."""
        oldest = self._batches.oldest() if self._batches is not None else None
        if oldest is None:
            return 0.0
        return max(self._clock() - oldest.accepted, 0.0)

    def stuck(self) -> bool:
        """Whether a batch has been held past its reorder window plus ``STUCK_AFTER_SECONDS``."""
        window = self.config.processing.reorder_window_seconds
        return self.oldest_batch_seconds() > window + STUCK_AFTER_SECONDS

    def _skipped(self, item: Item, reason: ProcessorReason) -> None:
        if self.metrics is not None:
            self.metrics.rejected(item.signal, reason, 1)

    def _count_failed(self, signal: Signal, count: int) -> None:
        if self.metrics is not None and count:
            self.metrics.rejected(signal, ProcessorReason.ANALYSIS_ERROR, count)

    # ----------------------------------------------------------------- thread

    def run(self, stop: threading.Event, after_step: Callable[[], None] | None = None) -> None:
        """Step every tick until ``stop`` is set (the pipeline thread's body).

        ``after_step`` runs on this thread between steps, when the state is at rest
        (the service's periodic state snapshot).
        """
        tick = self.config.processing.tick_seconds
        while not stop.wait(tick):
            try:
                self.step()
                if after_step is not None:
                    after_step()
            except Exception:  # the service keeps serving; the error is logged
                logger.exception("pipeline step failed")
