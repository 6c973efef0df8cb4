"""The processor service: receivers, pipeline, forwarder and admin endpoint wired together.

Start-up order: the conversations' state (from the last snapshot, when
``state.directory`` is set), the queue (replaying what a previous run left),
the forwarder, the pipeline thread, then the listeners, then readiness.
Shutdown (SIGTERM) runs it backwards: not ready, stop accepting (in-flight
requests finish), apply everything still in the reorder window, hand it to the
queue, write the state snapshot, send what can be sent within
``forward.drain_timeout_seconds``, and leave the rest on disk for the next
start. Between those, the pipeline thread writes a snapshot every
``state.snapshot_interval_seconds``.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any, TextIO

from otel_compaction._once import Once
from otel_compaction.processor.admin import AdminServer
from otel_compaction.processor.config import ProcessorConfig, split_endpoint
from otel_compaction.processor.forward import Forwarder, Outcome, SendResult, make_sender
from otel_compaction.processor.grpc import GrpcReceiver, server_credentials
from otel_compaction.processor.http import HttpReceiver
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import Entry, PersistentQueue
from otel_compaction.processor.snapshot import SnapshotRejected, SnapshotStore
from otel_compaction.processor.snapshot_codec import SnapshotError
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason

logger = logging.getLogger(__name__)

RECEIVER_GRACE_SECONDS = 5.0


class ProcessorService:
    """The whole service for one configuration.

    Args:
        config: a validated configuration.
        findings_out: where findings are logged as JSON lines; defaults to
            stdout when ``output.log_findings`` is on.
    """

    def __init__(self, config: ProcessorConfig, *, findings_out: TextIO | None = None) -> None:
        self.config = config
        fwd = config.forward
        self.queue: PersistentQueue | None = None
        if fwd.endpoint is not None and fwd.queue.directory is not None:
            self.queue = PersistentQueue(
                fwd.queue.directory,
                max_batches=fwd.queue.max_batches,
                max_bytes=fwd.queue.max_bytes,
                fsync=fwd.queue.fsync,
            )
        if findings_out is None and config.output.log_findings:
            findings_out = sys.stdout
        self.pipeline = Pipeline(config, queue=self.queue, findings_out=findings_out)
        registry = self.pipeline.state.registry
        self.metrics = ProcessorMetrics(
            config.output.service_name,
            livelocked=registry.livelocked_count,
            active=registry.__len__,
            queue_size=lambda: len(self.queue) if self.queue is not None else 0,
            otlp_endpoint=config.metrics.otlp_endpoint,
            otlp_interval=config.metrics.otlp_interval_seconds,
        )
        self.pipeline.metrics = self.metrics
        self.forwarder: Forwarder | None = None
        if self.queue is not None:
            self.forwarder = Forwarder(
                self.queue, make_sender(fwd), fwd.retry, on_result=self._forwarded
            )
        self.snapshots: SnapshotStore | None = None
        if config.state.directory is not None:
            self.snapshots = SnapshotStore(
                config.state.directory,
                self.pipeline.settings,
                max_conversations=config.state.max_conversations,
                max_bytes=config.state.max_bytes,
            )
        self.restored = 0
        self._next_snapshot = float("inf")
        self._stop_pipeline = threading.Event()
        self._pipeline_thread = threading.Thread(
            target=self.pipeline.run,
            args=(self._stop_pipeline, self._periodic_snapshot),
            name="pipeline",
            daemon=True,
        )
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        self.admin: AdminServer | None = None
        self._stopped = Once()

    # ------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Restore the state, replay the queue, start every thread and listener, report ready."""
        self._restore()
        recovered = self.pipeline.recover()
        if recovered:
            logger.warning("replaying %d batches accepted before the last stop", recovered)
        if self.forwarder is not None:
            self.forwarder.start()
        self._pipeline_thread.start()
        self._start_listeners()
        if self.admin is not None:
            self.admin.ready.set()
        logger.info("%s", self.describe())

    def _start_listeners(self) -> None:
        cfg = self.config.receivers
        token = self.config.bearer_token()
        if cfg.otlp_grpc is not None:
            credentials = self._grpc_credentials()
            with _binding("OTLP/gRPC", cfg.otlp_grpc):
                self.grpc = GrpcReceiver(
                    self.pipeline, cfg.otlp_grpc, max_request_bytes=cfg.max_request_bytes,
                    workers=cfg.max_concurrent_requests, token=token,
                    credentials=credentials, metrics=self.metrics,
                )  # fmt: skip
            self.grpc.start()
        if cfg.otlp_http is not None:
            host, port = split_endpoint(cfg.otlp_http)
            tls = self._ssl_context()
            with _binding("OTLP/HTTP", cfg.otlp_http):
                self.http = HttpReceiver(
                    self.pipeline, host, port, max_request_bytes=cfg.max_request_bytes,
                    max_concurrent=cfg.max_concurrent_requests,
                    max_inflight_bytes=cfg.max_inflight_bytes,
                    request_timeout=cfg.request_timeout_seconds,
                    max_connections=cfg.max_connections,
                    max_connections_per_peer=cfg.max_connections_per_peer, token=token,
                    tls=tls, metrics=self.metrics,
                )  # fmt: skip
            self.http.start()
        if self.config.metrics.endpoint is not None:
            host, port = split_endpoint(self.config.metrics.endpoint)
            with _binding("/metrics and /healthz", self.config.metrics.endpoint):
                self.admin = AdminServer(
                    host, port, exposition=self.metrics.exposition, status=self.status
                )
            self.admin.start()

    def stop(self) -> bool:
        """Drain and stop; True when the queue was emptied (else it stays on disk)."""
        if not self._stopped.claim():
            return True
        if self.admin is not None:
            self.admin.ready.clear()
        if self.grpc is not None:
            self.grpc.stop(RECEIVER_GRACE_SECONDS)
        if self.http is not None:
            self.http.stop()
        self._stop_pipeline.set()
        self._pipeline_thread.join()
        self.pipeline.drain()
        self._save_snapshot()
        emptied = True
        if self.forwarder is not None:
            emptied = self.forwarder.stop(self.config.forward.drain_timeout_seconds)
            if not emptied:
                logger.warning("%d batches left in the queue for the next start", len(self))
        self.metrics.shutdown()
        if self.admin is not None:
            self.admin.stop()
        return emptied

    def __len__(self) -> int:
        return len(self.queue) if self.queue is not None else 0

    def run_until_signalled(self) -> int:
        """Start, serve until SIGTERM or SIGINT, drain, and return an exit status."""
        done = threading.Event()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            logger.warning("received %s: draining", signal.Signals(signum).name)
            done.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.start()
            done.wait()
        finally:
            self.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return 0

    # ----------------------------------------------------------------- state

    def _restore(self) -> None:
        if self.snapshots is None:
            return
        self._next_snapshot = time.monotonic() + self.config.state.snapshot_interval_seconds
        try:
            self.restored = self.snapshots.load(self.pipeline.state)
        except SnapshotRejected as exc:
            logger.warning("state snapshot not used, starting with no conversations: %s", exc)
            self.metrics.snapshot_discarded(exc.reason)
        except OSError:
            logger.exception("state snapshot unreadable, starting with no conversations")
        else:
            if self.restored:
                logger.warning("restored %d conversations from the state snapshot", self.restored)

    def _periodic_snapshot(self) -> None:
        """The pipeline thread's hook: a snapshot when one is due."""
        if time.monotonic() >= self._next_snapshot:
            self._next_snapshot = time.monotonic() + self.config.state.snapshot_interval_seconds
            self._save_snapshot()

    def _save_snapshot(self) -> None:
        if self.snapshots is None:
            return
        try:
            saved = self.snapshots.save(self.pipeline.state, self.pipeline.unreleased_keys())
        except (OSError, SnapshotError):
            logger.exception("state snapshot not written; the previous one stays")
            self.metrics.snapshot_write_error()
            return
        if saved.left_out:
            logger.warning(
                "state snapshot: %d conversations kept, %d least recent left out (state.max_*)",
                saved.conversations,
                saved.left_out,
            )

    # ----------------------------------------------------------------- parts

    def describe(self) -> str:
        """One line for the log: where it listens (the bound ports), its mode, where output goes."""
        cfg = self.config
        listening = [
            f"{what} on {_bound(endpoint, server.port)}"
            for what, endpoint, server in (
                ("OTLP/gRPC", cfg.receivers.otlp_grpc, self.grpc),
                ("OTLP/HTTP", cfg.receivers.otlp_http, self.http),
                ("/metrics, /healthz and /readyz", cfg.metrics.endpoint, self.admin),
            )
            if endpoint is not None and server is not None
        ]
        output = [f"forwarding to {cfg.forward.endpoint}"] if cfg.forward.endpoint else []
        if cfg.output.log_findings:
            output.append("findings logged as JSON lines to stdout")
        return (
            f"otel-compaction processor: {cfg.output.mode} mode; listening: "
            f"{', '.join(listening) or 'nowhere'}; {'; '.join(output) or 'no output configured'}"
        )

    def status(self) -> dict[str, Any]:
        """The JSON document of ``/healthz`` and ``/readyz``."""
        return {
            "mode": self.config.output.mode,
            "conversations": len(self.pipeline.state.registry),
            "pending_items": self.pipeline.state.pending,
            "queue_batches": len(self),
            "queue_bytes": self.queue.size_bytes if self.queue is not None else 0,
            "last_forward_error": self.forwarder.last_error if self.forwarder else None,
            "oldest_batch_seconds": round(self.pipeline.oldest_batch_seconds(), 3),
            "stuck": self.pipeline.stuck(),
            "queue_error": self.pipeline.queue_error(),
        }

    def _forwarded(self, entry: Entry, result: SendResult) -> None:
        if result.outcome is Outcome.REJECTED:
            self.metrics.dropped(ProcessorReason.DOWNSTREAM_REJECTED, entry.items)
            return
        delivered = max(entry.items - result.rejected_items, 0)
        self.metrics.forwarded(entry.signal, delivered)
        if result.rejected_items:
            self.metrics.dropped(ProcessorReason.DOWNSTREAM_REJECTED, result.rejected_items)

    def _grpc_credentials(self) -> Any:
        tls = self.config.receivers.tls
        if tls is None:
            return None
        client_ca = tls.client_ca_file.read_bytes() if tls.client_ca_file else None
        return server_credentials(tls.cert_file.read_bytes(), tls.key_file.read_bytes(), client_ca)

    def _ssl_context(self) -> ssl.SSLContext | None:
        tls = self.config.receivers.tls
        if tls is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert_file, tls.key_file)
        if tls.client_ca_file is not None:
            context.load_verify_locations(tls.client_ca_file)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


@contextlib.contextmanager
def _binding(what: str, endpoint: str) -> Iterator[None]:
    """Turn a failure to listen into an ``OSError`` that names what and where."""
    try:
        yield
    except (OSError, RuntimeError) as exc:  # grpc raises RuntimeError("Failed to bind ...")
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OSError(f"cannot listen for {what} on {endpoint}: {reason}") from exc


def _bound(endpoint: str, port: int) -> str:
    """``host:port`` with the port actually bound (not the configured 0, when it was)."""
    host, _ = split_endpoint(endpoint)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
