"""The processor's own metrics: the shared compaction metrics plus its pipeline counters.

One OTel ``MeterProvider`` with a Prometheus reader on a private registry (what
``/metrics`` serves) and, when configured, a periodic OTLP metric exporter.
The compaction metrics are the lead's ``CompactionMetrics``, the same
instruments the in-process instrumentation records, so dashboards cannot tell
where a compaction was analyzed. Every counter is recorded at 0 for its known
attribute sets at start-up, so ``increase()`` sees the first event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from prometheus_client import CollectorRegistry, generate_latest

from otel_compaction import semconv as sc
from otel_compaction.emit.metrics import CompactionMetrics, create_gauge, create_instrument
from otel_compaction.model import TurnAnalysis
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.dialects import unread_spans
from otel_compaction.processor.bulk import BulkHistogram, BulkRecords
from otel_compaction.semconv import ProcessorReason, SnapshotReason

TRANSPORTS = tuple(sc.ProcessorTransport)
# The reasons a receiver can refuse items, and those that lose accepted items.
REJECT_REASONS = (
    ProcessorReason.MALFORMED,
    ProcessorReason.TOO_LARGE,
    ProcessorReason.UNSUPPORTED,
    ProcessorReason.UNAUTHENTICATED,
    ProcessorReason.OVERLOADED,
    ProcessorReason.DUPLICATE,
    ProcessorReason.LATE,
    ProcessorReason.ANALYSIS_ERROR,
    ProcessorReason.QUEUE_UNWRITABLE,
)
DROP_REASONS = (
    ProcessorReason.QUEUE_FULL,
    ProcessorReason.DOWNSTREAM_REJECTED,
    ProcessorReason.QUEUE_UNWRITABLE,
)
SHED_REASONS = (
    ProcessorReason.REQUEST_TIMEOUT,
    ProcessorReason.PEER_CONNECTIONS,
    ProcessorReason.CONNECTIONS,
)


class ProcessorMetrics:
    """Counters of the receive → process → forward pipeline, and the compaction metrics.

    Args:
        service_name: the ``service.name`` of the metrics resource.
        livelocked / active / queue_size: gauge callbacks.
        otlp_endpoint: also export metrics over OTLP/gRPC there, when set.
        otlp_interval: seconds between OTLP exports.
    """

    def __init__(
        self,
        service_name: str,
        *,
        livelocked: Callable[[], int],
        active: Callable[[], int],
        queue_size: Callable[[], int],
        otlp_endpoint: str | None = None,
        otlp_interval: float = 60.0,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        readers: list[MetricReader] = [PrometheusMetricReader(registry=self.registry)]
        if otlp_endpoint:
            readers.append(_otlp_reader(otlp_endpoint, otlp_interval))
        self.provider = MeterProvider(
            metric_readers=readers, resource=Resource.create({SERVICE_NAME: service_name})
        )
        meter = self.provider.get_meter("otel_compaction.processor", schema_url=sc.SCHEMA_URL)
        self.compaction = CompactionMetrics(meter, livelocked=livelocked, active=active)
        self._turns = BulkHistogram(self.compaction.token_fraction)
        self._records = BulkRecords()
        self.compaction.hold_records(self._records.instrument)
        self._received = create_instrument(meter, sc.METRIC_PROCESSOR_RECEIVED)
        self._rejected = create_instrument(meter, sc.METRIC_PROCESSOR_REJECTED)
        self._dropped = create_instrument(meter, sc.METRIC_PROCESSOR_DROPPED)
        self._forwarded = create_instrument(meter, sc.METRIC_PROCESSOR_FORWARDED)
        self._shed = create_instrument(meter, sc.METRIC_PROCESSOR_SHED)
        self._queue = create_gauge(meter, sc.METRIC_PROCESSOR_QUEUE, queue_size)
        self._discarded = create_instrument(meter, sc.METRIC_PROCESSOR_SNAPSHOT_DISCARDED)
        self._write_errors = create_instrument(meter, sc.METRIC_PROCESSOR_SNAPSHOT_WRITE_ERRORS)
        self._unread = _unread_spans_counter(meter)
        self._prime()

    def _prime(self) -> None:
        for signal in Signal:
            for transport in TRANSPORTS:
                self.received(signal, transport, 0)
            for reason in REJECT_REASONS:
                self.rejected(signal, reason, 0)
            self.forwarded(signal, 0)
        for reason in DROP_REASONS:
            self.dropped(reason, 0)
        for reason in SHED_REASONS:
            self.shed(reason, 0)
        for problem in SnapshotReason:
            self.snapshot_discarded(problem, 0)
        self._write_errors.add(0)

    def record_turn(self, turn: TurnAnalysis, provider: str | None) -> None:
        """Hold one turn's token fraction (``CompactionMetrics.record_turn``'s series) until
        ``flush_turns``, which hands a step's turns to the SDK in bulk (``processor.bulk``)."""
        self._turns.add(turn.pressure.token_fraction, self.compaction.turn_attributes(provider))

    def flush_turns(self) -> None:
        """Hand the turns, and the compaction metrics' records (``BulkRecords``), held since
        the last call to the SDK."""
        self._turns.flush()
        self._records.flush()

    def received(self, signal: Signal, transport: str, count: int) -> None:
        """Count items accepted by a receiver."""
        self._received.add(
            count, {sc.PROCESSOR_SIGNAL: signal.spec.name, sc.PROCESSOR_TRANSPORT: transport}
        )

    def rejected(self, signal: Signal, reason: ProcessorReason, count: int) -> None:
        """Count items (or requests) refused, with the reason."""
        self._rejected.add(
            count, {sc.PROCESSOR_SIGNAL: signal.spec.name, sc.PROCESSOR_REASON: reason.value}
        )

    def dropped(self, reason: ProcessorReason, count: int) -> None:
        """Count accepted items that could not be delivered downstream."""
        self._dropped.add(count, {sc.PROCESSOR_REASON: reason.value})

    def shed(self, reason: ProcessorReason, count: int = 1) -> None:
        """Count HTTP connections closed or refused to protect the others."""
        self._shed.add(count, {sc.PROCESSOR_REASON: reason.value})

    def forwarded(self, signal: Signal, count: int) -> None:
        """Count items delivered downstream."""
        self._forwarded.add(count, {sc.PROCESSOR_SIGNAL: signal.spec.name})

    def snapshot_discarded(self, reason: SnapshotReason, count: int = 1) -> None:
        """Count a state snapshot not used at start-up, with the reason."""
        self._discarded.add(count, {sc.PROCESSOR_SNAPSHOT_REASON: reason.value})

    def snapshot_write_error(self) -> None:
        """Count a state snapshot that could not be written."""
        self._write_errors.add(1)

    def exposition(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        """Flush the OTLP exporter (if any) and stop the readers."""
        self.provider.shutdown()


def _unread_spans_counter(meter: Any) -> Any:
    """Other instrumentations' inference spans the reading could not use, by dialect: the
    counts ``otlp.dialects`` keeps (every dialect reported, at 0 until one comes)."""
    spec = sc.METRIC_PROCESSOR_UNREAD_SPANS

    def callback(_options: CallbackOptions) -> Iterable[Observation]:
        counts = unread_spans()
        return [
            Observation(counts.get(d.value, 0), {sc.PROCESSOR_DIALECT: d.value}) for d in sc.Dialect
        ]

    return meter.create_observable_counter(
        spec.name, callbacks=[callback], unit=spec.unit, description=spec.description
    )


def _otlp_reader(endpoint: str, interval: float) -> MetricReader:
    exporter: Any = OTLPMetricExporter(endpoint=endpoint, insecure=True)
    return PeriodicExportingMetricReader(exporter, export_interval_millis=interval * 1000)
