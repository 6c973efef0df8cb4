"""What the pipeline does with the engine's results: metrics, flags, findings, rediscoveries.

One :class:`Results` per pipeline, used on the pipeline thread. For each applied item it
records the turn's and the compaction's metrics, writes the flags of an enriched span, logs
each finding as a JSON line, and remembers where each recent compaction's span is: the
findings its settlement adds later and its rediscovery spans go under it. Finding and
rediscovery spans are queued as a request of their own; findings wait in memory (bounded,
``QueueWatch``) while the queue cannot be written, rediscoveries are dropped then.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TextIO

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_compaction._bounded import BoundedMap
from otel_compaction.model import CompactionAnalysis, Finding, TurnAnalysis
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.extract import Item
from otel_compaction.otlp.state import Applied, ConversationState
from otel_compaction.processor.enrich import write_flags
from otel_compaction.processor.queue import PersistentQueue, QueueFull, QueueUnwritable
from otel_compaction.processor.queue_watch import QueueWatch
from otel_compaction.processor.tap import FindingContext, RediscoveryContext, findings_request
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger("otel_compaction.processor.pipeline")  # the pipeline's messages

MAX_UNSETTLED = 4096
"""Compactions whose span location is kept until a later turn settles them."""

Where = tuple[bytes, bytes, int]
"""A span's trace id, span id and time (ns)."""


class Results:
    """The outputs of the engine's results (see the module).

    Args:
        state: the conversation state (its analyzers' rediscovery baselines).
        service_name: the ``service.name`` of the finding spans' resource.
        enrich: whether spans are forwarded with their flags written.
        metrics: where the analysis metrics go (None: not recorded).
        queue: where finding spans are queued (None: not emitted).
        watch: the queue's writability (None without a queue).
        findings_out: where findings are logged as JSON lines (None: not logged).
    """

    def __init__(
        self,
        state: ConversationState,
        service_name: str,
        *,
        enrich: bool,
        metrics: ProcessorMetrics | None,
        queue: PersistentQueue | None,
        watch: QueueWatch | None,
        findings_out: TextIO | None,
    ) -> None:
        self._state = state
        self._service = service_name
        self._enrich = enrich
        self.metrics = metrics
        """Where counters go (the pipeline sets it again when the service's meter is ready)."""
        self._queue = queue
        self._watch = watch
        self._findings_out = findings_out
        self._out_lock = threading.Lock()
        # Where recent compactions were seen, for the findings their settlement adds.
        self._compaction_spans: BoundedMap[str, Where] = BoundedMap(MAX_UNSETTLED)
        # Where each recent compaction's span is, for its rediscovery span (known calls
        # after the compaction settled, when _compaction_spans no longer holds it).
        self._recent_compactions: BoundedMap[str, Where] = BoundedMap(MAX_UNSETTLED)
        self._rediscoveries: list[RediscoveryContext] = []

    def record(self, result: Applied, findings: list[FindingContext]) -> None:
        """One applied item: its metrics, its flags, and its compaction's findings (added to
        ``findings``, spans for tap mode) and place."""
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
        writes = self._enrich and item.target is not None and (analysis.findings or not item.bare)
        if writes and write_flags(item.target, analysis) and item.batch is not None:
            item.batch.changed.append(item)
        for finding in analysis.findings:
            self._log_finding(finding)
            findings.append(FindingContext(finding, item.trace_id, item.span_id, item.time_ns))
        where = (item.trace_id, item.span_id, item.time_ns)
        self._recent_compactions.put(analysis.record.compaction_id, where)
        if not analysis.record.settled:
            self._compaction_spans.put(analysis.record.compaction_id, where)

    def settled(self, settled: CompactionAnalysis, item: Item, late: list[FindingContext]) -> None:
        """A turn settled a compaction: its reclaimed tokens, and its late findings, as
        finding spans under the compaction's span (the turn's trace if it is forgotten)."""
        where = self._compaction_spans.pop(settled.record.compaction_id)
        trace_id, span_id, time_ns = where or (item.trace_id, b"", item.time_ns)
        if self.metrics is not None:
            self.metrics.compaction.record_settled(settled)
        for finding in settled.findings:
            self._log_finding(finding)
            late.append(FindingContext(finding, trace_id, span_id, time_ns))

    def take_rediscoveries(self) -> list[RediscoveryContext]:
        """The rediscovery spans recorded since the last call, to emit."""
        taken, self._rediscoveries = self._rediscoveries, []
        return taken

    @property
    def rediscovering(self) -> bool:
        """Whether rediscovery spans wait to be emitted."""
        return bool(self._rediscoveries)

    def emit(
        self, findings: list[FindingContext], rediscoveries: list[RediscoveryContext] | None = None
    ) -> None:
        """Queue finding spans (with those held back while the queue could not be written),
        and rediscovery spans (dropped, not held, when the queue cannot be written)."""
        if self._queue is None or self._watch is None:
            return
        findings = [*self._watch.take_held(), *findings]
        try:
            request = findings_request(findings, self._service, rediscoveries=rediscoveries or ())
            count = len(findings) + len(rediscoveries or ())
            self._queue.put(Signal.TRACES, request.SerializeToString(), count, ready=True)
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
            if self.metrics is not None and findings:
                self.metrics.rejected(Signal.TRACES, ProcessorReason.ANALYSIS_ERROR, len(findings))

    def _rediscovered(self, turn: TurnAnalysis, item: Item) -> None:
        """Compactions' rediscovery horizons this turn closed: the histogram, and a span
        each under the compaction's span (the turn's trace if it is forgotten)."""
        analyzer = self._state.registry.peek(item.conversation_id)
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

    def _log_finding(self, finding: Finding) -> None:
        if self._findings_out is None:
            return
        line = json.dumps(finding.to_json(), sort_keys=True)
        with self._out_lock:
            self._findings_out.write(line + "\n")
            self._findings_out.flush()


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
