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
first (``rounds``), so they leave while the rest is applied.

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

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_compaction._bounded import BoundedMap
from otel_compaction.model import CompactionAnalysis, Finding, TurnAnalysis
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.agent_tools import AgentTools
from otel_compaction.otlp.decode import DecodeError, Signal, item_count, parse_protobuf
from otel_compaction.otlp.extract import Item, span_items
from otel_compaction.otlp.spanview import splice_spans
from otel_compaction.otlp.state import Applied, ConversationState
from otel_compaction.processor import heap
from otel_compaction.processor.config import ProcessorConfig
from otel_compaction.processor.enrich import write_flags
from otel_compaction.processor.queue import PersistentQueue, QueueFull, QueueUnwritable
from otel_compaction.processor.queue_watch import QueueWatch
from otel_compaction.processor.rounds import rounds
from otel_compaction.processor.tap import FindingContext, RediscoveryContext, findings_request
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger(__name__)

EXPIRE_EVERY_SECONDS = 1.0
MAX_UNSETTLED = 4096
"""Compactions whose span location is kept until a later turn settles them."""
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
        self.metrics = metrics
        self.queue = queue
        self.state = ConversationState(
            self.settings,
            window=config.processing.reorder_window_seconds,
            dedupe_memory=config.processing.dedupe_memory,
            clock=clock,
            on_skip=self._skipped,
        )
        self._findings_out = findings_out
        self._clock = clock
        self._lock = threading.Lock()
        self._out_lock = threading.Lock()
        self._batches: deque[Batch] = deque()
        self._next_expiry = clock() + EXPIRE_EVERY_SECONDS
        self._trim_every = config.processing.trim_memory_seconds
        self._next_trim = clock() + self._trim_every
        self._retry_after = max(1, round(config.processing.reorder_window_seconds + 0.5))
        # Where recent compactions were seen, for the findings their settlement adds.
        self._compaction_spans: BoundedMap[str, tuple[bytes, bytes, int]] = BoundedMap(
            MAX_UNSETTLED
        )
        # Where each recent compaction's span is, for its rediscovery span (known calls
        # after the compaction settled, when _compaction_spans no longer holds it).
        self._recent_compactions: BoundedMap[str, tuple[bytes, bytes, int]] = BoundedMap(
            MAX_UNSETTLED
        )
        self._rediscoveries: list[RediscoveryContext] = []
        # The agents' tool events, held for the next turn of their conversation (rediscovery).
        self._agent_tools = AgentTools(self.settings.max_conversations)
        self._release_failing = False
        self._watch = None if queue is None else QueueWatch(queue, clock, self._dropped_unwritable)

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
        for item in items:
            item.batch = batch
        self._batches.append(batch)

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
            parts = rounds(groups, _request_order)  # its lists are in turn order
            applied = sum(self._process(part, ordered=True) for part in parts)
        else:
            applied = self._process(groups)
        watch = self._watch
        if watch is not None:
            watch.probe_if_due()
            if watch.holds() and not watch.failing:
                self._emit_findings([])
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
        for result in applied:
            settled = result.turn.settled if result.turn is not None else None
            if result.compaction is not None and result.compaction.settled is not None:
                settled = result.compaction.settled
            redone = result.turn is not None and bool(result.turn.rediscovered)
            if quiet and result.compaction is None and settled is None and not redone:
                continue  # a turn: nothing to record without metrics
            try:
                if settled is not None:
                    self._settled(settled, result.item, late)
                if not quiet or result.compaction is not None or redone:
                    self._record(result, findings)
            except Exception:  # the item passes through without a verdict
                logger.exception("cannot record the analysis of a span of %s",
                                 result.item.conversation_id)  # fmt: skip
                self._skipped(result.item, ProcessorReason.ANALYSIS_ERROR)
        if self.metrics is not None:
            self.metrics.flush_turns()  # the step's turns, in bulk
        if findings and not self.enrich:
            self._emit_findings(findings)
        if late or self._rediscoveries:
            # Found after the compaction's span went on: spans in both modes.
            rediscoveries, self._rediscoveries = self._rediscoveries, []
            self._emit_findings(late, rediscoveries)
        if self._batches:
            self._release(groups)
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

    def _record(self, result: Applied, findings: list[FindingContext]) -> None:
        item = result.item
        if result.turn is not None and result.turn.rediscovered:
            self._rediscovered(result.turn, item)
        if result.turn is not None and self.metrics is not None:
            self.metrics.record_turn(result.turn, item.provider)
            if result.turn.transition is not None:
                source = result.turn.phase.source.value
                self.metrics.compaction.record_transition(result.turn.transition, source)
        analysis = result.compaction
        if analysis is None:
            return
        if self.metrics is not None:
            self.metrics.compaction.record_compaction(analysis, context=_span_context(item))
        # A bare span of ours without findings: there is no flag to remove or set.
        writes = self.enrich and item.target is not None and (analysis.findings or not item.bare)
        if writes and write_flags(item.target, analysis) and item.batch is not None:
            item.batch.changed.append(item)
        for finding in analysis.findings:
            self._log_finding(finding)
            findings.append(FindingContext(finding, item.trace_id, item.span_id, item.time_ns))
        where = (item.trace_id, item.span_id, item.time_ns)
        self._recent_compactions.put(analysis.record.compaction_id, where)
        if not analysis.record.settled:
            self._compaction_spans.put(analysis.record.compaction_id, where)

    def _rediscovered(self, turn: TurnAnalysis, item: Item) -> None:
        """Compactions' rediscovery horizons this turn closed: the histogram, and a span
        each under the compaction's span (the turn's trace if it is forgotten)."""
        analyzer = self.state.registry.peek(item.conversation_id)
        baseline = analyzer.rediscovery_baseline if analyzer is not None else None
        for found in turn.rediscovered:
            where = self._recent_compactions.get(found.compaction_id or "")
            trace_id, span_id, time_ns = where or (item.trace_id, b"", item.time_ns)
            if self.metrics is not None:
                self.metrics.compaction.record_rediscovery(found)
            self._rediscoveries.append(
                RediscoveryContext(
                    turn.conversation_id, found, baseline, trace_id, span_id, time_ns
                )
            )

    def _settled(self, settled: CompactionAnalysis, item: Item, late: list[FindingContext]) -> None:
        """A turn settled a compaction: its reclaimed tokens, and its late findings, as
        finding spans under the compaction's span (the turn's trace if it is forgotten)."""
        where = self._compaction_spans.pop(settled.record.compaction_id)
        trace_id, span_id, time_ns = where or (item.trace_id, b"", item.time_ns)
        if self.metrics is not None:
            self.metrics.compaction.record_settled(settled)
        for finding in settled.findings:
            self._log_finding(finding)
            late.append(FindingContext(finding, trace_id, span_id, time_ns))

    def _log_finding(self, finding: Finding) -> None:
        if self._findings_out is None:
            return
        line = json.dumps(finding.to_json(), sort_keys=True)
        with self._out_lock:
            self._findings_out.write(line + "\n")
            self._findings_out.flush()

    def _emit_findings(
        self, findings: list[FindingContext], rediscoveries: list[RediscoveryContext] | None = None
    ) -> None:
        """Queue finding spans (with those held back while the queue could not be written),
        and rediscovery spans (dropped, not held, when the queue cannot be written)."""
        if self.queue is None or self._watch is None:
            return
        findings = [*self._watch.take_held(), *findings]
        try:
            service = self.config.output.service_name
            request = findings_request(findings, service, rediscoveries=rediscoveries or ())
            count = len(findings) + len(rediscoveries or ())
            self.queue.put(Signal.TRACES, request.SerializeToString(), count, ready=True)
            self._watch.writable()
        except QueueUnwritable as exc:
            self._watch.failed(exc)
            self._watch.hold(findings)
        except QueueFull:
            logger.error("forwarding queue full: %d finding spans dropped", len(findings))
            if self.metrics is not None:
                self.metrics.dropped(ProcessorReason.QUEUE_FULL, len(findings))
        except Exception:  # a disk error or a bug: the findings are lost, the pipeline goes on
            logger.exception("cannot queue %d finding spans", len(findings))
            self._count_failed(Signal.TRACES, len(findings))

    def _dropped_unwritable(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.dropped(ProcessorReason.QUEUE_UNWRITABLE, count)

    def _release(self, groups: list[tuple[str, list[Item]]]) -> None:
        """Hand processed requests to the queue, oldest first (keeps per-conversation order)."""
        for _, items in groups:
            for item in items:
                batch = item.batch
                if batch is not None:
                    batch.remaining -= 1
                    batch.taken.append(item.dedupe_key)
        while self._batches and self._batches[0].remaining <= 0:
            if not self._complete(self._batches[0]):
                break  # the queue cannot be written: the head stays and is retried next tick
            self._batches.popleft()

    def _complete(self, batch: Batch) -> bool:
        """Hand one processed batch to the queue; False when the queue cannot take it now."""
        queue = self.queue
        assert queue is not None
        try:
            output = _output(batch, queue) if self.enrich else None
        except Exception:  # the batch leaves as it was received
            logger.exception("cannot write the flags of batch %d; forwarded as received", batch.seq)
            self._count_failed(batch.signal, len(batch.changed))
            output = None
        try:
            if self.enrich:
                self._complete_enriched(queue, batch, output)
            else:
                queue.remove(batch.seq)  # applied; its findings are queued already
        except (OSError, QueueUnwritable) as exc:
            if not self._release_failing:
                logger.error("cannot release batch %d to the queue (%s); retrying", batch.seq, exc)
            self._release_failing = True
            return False
        self._release_failing = False
        return True

    def _complete_enriched(
        self, queue: PersistentQueue, batch: Batch, output: bytes | None
    ) -> None:
        """The batch made ready; with its new bytes if they can be written, else as received
        (a rename needs no space: the queue's head must never wait for free space)."""
        try:
            queue.complete(batch.seq, output, batch.items)
        except QueueUnwritable as exc:
            if self._watch is not None:
                self._watch.failed(exc)
            logger.error("flags of batch %d not written (%s); sent as received", batch.seq, exc)
            if self.metrics is not None:
                self.metrics.rejected(batch.signal, ProcessorReason.QUEUE_UNWRITABLE,
                                      len(batch.changed))  # fmt: skip
            queue.complete(batch.seq, None, batch.items)

    def unreleased_keys(self) -> list[int]:
        """The de-duplication keys of items already taken whose batch is still written ahead
        (not released): a restart replays that batch, and the snapshot must know them."""
        return [key for batch in self._batches for key in batch.taken]

    def oldest_batch_seconds(self) -> float:
        """How long the oldest batch not yet released has been held (0: none is held)."""
        try:
            oldest = self._batches[0]
        except IndexError:
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


def _request_order(item: Item) -> int:
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


def _span_context(item: Item) -> Context | None:
    """A context whose current span is ``item``'s, so the compaction's metrics carry it as
    their exemplar (a span that reached us was recorded: it counts as sampled); None for an
    item with no span ids (imported transcripts, log records without a trace)."""
    trace_id = int.from_bytes(item.trace_id or b"", "big")
    span_id = int.from_bytes(item.span_id or b"", "big")
    if not trace_id or not span_id:
        return None
    span = NonRecordingSpan(
        SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    )
    return trace.set_span_in_context(span)
