"""The accepted requests, written ahead, until their items are applied and they are released.

The pipeline keeps every accepted request it wrote ahead in :class:`Batches`, in the order
it accepted them. When a step has applied the last of a request's items, the oldest
requests whose items are all applied are released to the queue, oldest first, so each
conversation's spans leave in order: in enrich mode with the flags the processor wrote
(only the changed spans re-encoded, ``spanview.splice_spans``), or as received when that
fails; in tap mode the request's file is removed (its findings are queued already). A queue
that refuses a release keeps the head, which is retried on the next step.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import Item
from otel_compaction.otlp.spanview import splice_spans
from otel_compaction.processor.queue import PersistentQueue, QueueUnwritable
from otel_compaction.processor.queue_watch import QueueWatch
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger("otel_compaction.processor.pipeline")  # the pipeline's messages


@dataclass(slots=True)
class Batch:
    """An accepted request, written ahead, waiting for its items to be applied.

    ``request`` is kept in enrich mode only (tap mode sends no request on);
    ``changed`` holds the items whose span (or log record) the processor wrote
    flags on; the bytes written ahead stay in the queue's file meanwhile.
    """

    seq: int
    signal: Signal
    request: Any
    items: int
    remaining: int
    accepted: float = 0.0
    changed: list[Item] = field(default_factory=list)
    taken: list[int] = field(default_factory=list)
    """The de-duplication keys of its items the state has taken (applied or skipped)."""


class Batches:
    """The batches not yet released, oldest first (see the module).

    Args:
        queue: the persistent forwarding queue.
        enrich: whether requests go on with their flags (else tap: their files are removed).
        metrics: where counters go (None: not counted).
        watch: the queue's writability.
        count_failed: counts items of a signal the processor failed on.
    """

    def __init__(
        self,
        queue: PersistentQueue,
        *,
        enrich: bool,
        metrics: ProcessorMetrics | None,
        watch: QueueWatch,
        count_failed: Callable[[Signal, int], None],
    ) -> None:
        self._queue = queue
        self._enrich = enrich
        self.metrics = metrics
        """Where counters go (the pipeline sets it again when the service's meter is ready)."""
        self._watch = watch
        self._count_failed = count_failed
        self._held: deque[Batch] = deque()
        self._failing = False

    def __bool__(self) -> bool:
        return bool(self._held)

    def __iter__(self) -> Iterator[Batch]:
        return iter(self._held)

    def track(self, batch: Batch, items: list[Item]) -> None:
        """Hold ``batch``, its items pointing at it."""
        for item in items:
            item.batch = batch
        self._held.append(batch)

    def oldest(self) -> Batch | None:
        """The oldest batch not yet released (None: none is held)."""
        return self._held[0] if self._held else None

    def release(self, groups: list[tuple[str, list[Item]]]) -> None:
        """Count the applied items of ``groups`` and hand the batches they completed to the
        queue, oldest first (keeps per-conversation order)."""
        for _, items in groups:
            for item in items:
                batch = item.batch
                if batch is not None:
                    batch.remaining -= 1
                    batch.taken.append(item.dedupe_key)
        held = self._held
        while held and held[0].remaining <= 0:
            if not self._complete(held[0]):
                break  # the queue cannot be written: the head stays and is retried next tick
            held.popleft()

    def _complete(self, batch: Batch) -> bool:
        """Hand one processed batch to the queue; False when the queue cannot take it now."""
        queue = self._queue
        try:
            output = _output(batch, queue) if self._enrich else None
        except Exception:  # the batch leaves as it was received
            logger.exception("cannot write the flags of batch %d; forwarded as received", batch.seq)
            self._count_failed(batch.signal, len(batch.changed))
            output = None
        try:
            if self._enrich:
                self._complete_enriched(batch, output)
            else:
                queue.remove(batch.seq)  # applied; its findings are queued already
        except (OSError, QueueUnwritable) as exc:
            if not self._failing:
                logger.error("cannot release batch %d to the queue (%s); retrying", batch.seq, exc)
            self._failing = True
            return False
        self._failing = False
        return True

    def _complete_enriched(self, batch: Batch, output: bytes | None) -> None:
        """The batch made ready; with its new bytes if they can be written, else as received
        (a rename needs no space: the queue's head must never wait for free space)."""
        try:
            self._queue.complete(batch.seq, output, batch.items)
        except QueueUnwritable as exc:
            self._watch.failed(exc)
            logger.error("flags of batch %d not written (%s); sent as received", batch.seq, exc)
            if self.metrics is not None:
                self.metrics.rejected(batch.signal, ProcessorReason.QUEUE_UNWRITABLE,
                                       len(batch.changed))  # fmt: skip
            self._queue.complete(batch.seq, None, batch.items)


def request_order(item: Item) -> int:
    """Where an item's request was accepted among the others (-1: no request held)."""
    batch = item.batch
    return -1 if batch is None else int(batch.seq)


def _output(batch: Batch, queue: PersistentQueue) -> bytes | None:
    """What goes downstream for a processed batch; None: the request as written ahead."""
    if not batch.changed:
        return None
    if batch.signal is Signal.TRACES:
        spans = {}
        for item in batch.changed:
            if item.position is None:
                break
            spans[item.position] = item.target.SerializeToString()
        else:
            written = queue.read(batch.seq)
            if written is not None:
                return splice_spans(written, spans)
    out: bytes = batch.request.SerializeToString()
    return out
