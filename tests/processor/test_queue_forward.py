"""The persistent queue and the forwarder: order, persistence, crash leftovers, retry."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.config import RetryConfig
from otel_compaction.processor.forward import (
    Backoff,
    Forwarder,
    Outcome,
    SendResult,
    _http_result,
)
from otel_compaction.processor.queue import Entry, PersistentQueue, QueueFull

FAST = RetryConfig(initial_interval_seconds=0.01, max_interval_seconds=0.02)


def test_batches_leave_in_order_and_survive_a_reopen(tmp_path: Path) -> None:
    """What was put is still there, in order, after the queue is opened again."""
    queue = PersistentQueue(tmp_path)
    for n in range(3):
        queue.put(Signal.TRACES, bytes([n]) * 10, 1, ready=True)
    reopened = PersistentQueue(tmp_path)
    head = reopened.head(timeout=0)
    assert head is not None
    assert head[1] == b"\0" * 10
    reopened.remove(head[0].seq)
    second = reopened.head(timeout=0)
    assert second is not None
    assert second[1] == b"\1" * 10
    assert len(reopened) == 2
    assert reopened.put(Signal.LOGS, b"x", 1, ready=True) == 4  # numbering continues


def test_a_raw_head_blocks_until_it_is_completed(tmp_path: Path) -> None:
    """A batch still being processed holds back the batches behind it."""
    queue = PersistentQueue(tmp_path)
    seq = queue.put(Signal.TRACES, b"raw", 1, ready=False)
    queue.put(Signal.TRACES, b"next", 1, ready=True)
    assert queue.head(timeout=0) is None
    queue.complete(seq, b"processed", 1)
    head = queue.head(timeout=0)
    assert head is not None
    assert head[1] == b"processed"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".ready", ".ready"]


def test_an_unchanged_raw_batch_becomes_ready_as_written(tmp_path: Path) -> None:
    """Completing with no new bytes renames the raw file: same bytes, one ready file."""
    queue = PersistentQueue(tmp_path)
    seq = queue.put(Signal.TRACES, b"as received", 3, ready=False)
    queue.complete(seq, None, 3)
    head = queue.head(timeout=0)
    assert head is not None
    assert (head[0].ready, head[0].size, head[1]) == (True, 11, b"as received")
    assert [p.name for p in tmp_path.iterdir()] == [head[0].name()]
    assert PersistentQueue(tmp_path).size_bytes == 11


def test_crash_leftovers_are_cleaned_on_open(tmp_path: Path) -> None:
    """A half-written temporary file is deleted; a raw file beside its ready twin is dropped."""
    (tmp_path / "0000000000000001-traces-1.raw").write_bytes(b"old")
    (tmp_path / "0000000000000001-traces-1.ready").write_bytes(b"new")
    (tmp_path / "0000000000000002-traces-1.ready.tmp").write_bytes(b"half")
    (tmp_path / "README").write_text("not ours")
    queue = PersistentQueue(tmp_path)
    assert len(queue) == 1
    head = queue.head(timeout=0)
    assert head is not None
    assert head[1] == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "0000000000000001-traces-1.ready",
        "README",
    ]


def test_the_queue_is_bounded(tmp_path: Path) -> None:
    """Past ``max_batches`` or ``max_bytes`` a put raises ``QueueFull``."""
    queue = PersistentQueue(tmp_path, max_batches=2, max_bytes=1024)
    queue.put(Signal.TRACES, b"a", 1, ready=True)
    with pytest.raises(QueueFull):
        queue.put(Signal.TRACES, b"b" * 2000, 1, ready=True)
    queue.put(Signal.TRACES, b"b", 1, ready=True)
    with pytest.raises(QueueFull):
        queue.put(Signal.TRACES, b"c", 1, ready=True)
    assert not queue.has_room()


def test_backoff_grows_caps_and_honours_the_server_hint() -> None:
    """Delays double up to the cap (±20% jitter); a retry hint raises the delay."""
    backoff = Backoff(RetryConfig(initial_interval_seconds=1, max_interval_seconds=4))
    delays = [backoff.next_delay() for _ in range(5)]
    assert 0.8 <= delays[0] <= 1.2
    assert all(d <= 4.8 for d in delays)
    assert delays[-1] >= 3.2
    backoff.reset()
    assert backoff.next_delay(hint=3.0) >= 3.0


class FlakySender:
    """Fails ``failures`` times, then records what it is sent."""

    def __init__(self, failures: int, outcome: Outcome = Outcome.RETRY) -> None:
        self.failures = failures
        self.outcome = outcome
        self.sent: list[bytes] = []
        self.done = threading.Event()

    def send(self, signal: Signal, data: bytes) -> SendResult:
        if self.failures:
            self.failures -= 1
            return SendResult(self.outcome, "down")
        self.sent.append(data)
        return SendResult(Outcome.SENT)

    def close(self) -> None:
        self.done.set()


def test_the_forwarder_retries_until_delivered_in_order(tmp_path: Path) -> None:
    """A downstream that fails first gets every batch, in queue order, once it recovers."""
    queue = PersistentQueue(tmp_path)
    for n in range(5):
        queue.put(Signal.TRACES, bytes([n]), 1, ready=True)
    sender = FlakySender(failures=3)
    results: list[tuple[Entry, SendResult]] = []
    forwarder = Forwarder(queue, sender, FAST, on_result=lambda e, r: results.append((e, r)))
    forwarder.start()
    assert forwarder.stop(drain_timeout=10.0)
    assert sender.sent == [bytes([n]) for n in range(5)]
    assert len(queue) == 0
    assert len(results) == 5


def test_a_permanently_refused_batch_is_dropped_and_reported(tmp_path: Path) -> None:
    """A batch the next hop rejects for good is removed and reported, the next one goes on."""
    queue = PersistentQueue(tmp_path)
    queue.put(Signal.TRACES, b"bad", 3, ready=True)
    queue.put(Signal.TRACES, b"good", 1, ready=True)
    sender = FlakySender(failures=1, outcome=Outcome.REJECTED)
    results: list[SendResult] = []
    forwarder = Forwarder(queue, sender, FAST, on_result=lambda e, r: results.append(r))
    forwarder.start()
    assert forwarder.stop(drain_timeout=10.0)
    assert [r.outcome for r in results] == [Outcome.REJECTED, Outcome.SENT]
    assert sender.sent == [b"good"]


def test_stop_leaves_undelivered_batches_on_disk(tmp_path: Path) -> None:
    """When the next hop stays down, stopping keeps the batches for the next start."""
    queue = PersistentQueue(tmp_path)
    queue.put(Signal.TRACES, b"kept", 1, ready=True)
    forwarder = Forwarder(queue, FlakySender(failures=10**6), FAST)
    forwarder.start()
    assert forwarder.stop(drain_timeout=0.1) is False
    assert len(PersistentQueue(tmp_path)) == 1


@pytest.mark.parametrize(
    ("status", "retry_after", "outcome", "hint"),
    [(200, None, Outcome.SENT, None), (429, "7", Outcome.RETRY, 7.0),
     (503, None, Outcome.RETRY, None), (400, None, Outcome.REJECTED, None)],
)  # fmt: skip
def test_http_statuses_map_to_outcomes(
    status: int, retry_after: str | None, outcome: Outcome, hint: float | None
) -> None:
    """OTLP/HTTP: 200 sent, 429/503 retry (with Retry-After), other 4xx rejected."""
    result = _http_result(Signal.TRACES, status, retry_after, b"")
    assert (result.outcome, result.retry_after) == (outcome, hint)
