"""What voids a processor benchmark run: spans the processor skipped instead of processing.

Every pass of every payload must be new to the processor (``benchmarks.processor.payloads``); a span
it skips as a ``duplicate`` (or a turn as ``late``) costs almost nothing, so a run with any
measures the skip path, not the processor. The benchmark reads the processor's own
``/metrics`` after each run and stops with :class:`SkippedSpans` if it counted any.
"""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from otel_compaction import semconv as sc

SKIP_REASONS = (sc.ProcessorReason.DUPLICATE.value, sc.ProcessorReason.LATE.value)


class SkippedSpans(RuntimeError):
    """The processor skipped spans of the benchmark's payload: the run measured nothing true."""


def metrics_endpoint(work: Path, key: str) -> str:
    """A free loopback ``HOST:PORT`` for system ``key``'s ``/metrics``, noted in ``work``."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (work / f"processor-{key}.metrics-port").write_text(str(port))
    return f"127.0.0.1:{port}"


def skipped(exposition: bytes) -> dict[str, float]:
    """Items rejected as ``duplicate`` or ``late`` in a processor's Prometheus exposition."""
    name = sc.METRIC_PROCESSOR_REJECTED.prometheus
    label = sc.prometheus_label(sc.PROCESSOR_REASON)
    out = dict.fromkeys(SKIP_REASONS, 0.0)
    for family in text_string_to_metric_families(exposition.decode()):
        for sample in family.samples:
            reason = sample.labels.get(label)
            if sample.name == name and reason in out:
                out[reason] += sample.value
    return out


def check_run(work: Path, key: str, *, late_allowed: bool = False) -> dict[str, float]:
    """Raise ``SkippedSpans`` if the processor run noted in ``work`` skipped any span; its
    skip counts otherwise.

    ``late_allowed``: a run without a reorder window (``B0``) is sent requests eight at a
    time, so a conversation's turns can be applied out of order and counted ``late``: that is
    what the window is for. Such a run keeps its figures and reports the count beside them;
    a ``duplicate`` still voids it.
    """
    port = int((work / f"processor-{key}.metrics-port").read_text())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        counts = skipped(response.read())
    voiding = {k: v for k, v in counts.items() if v and not (late_allowed and k == "late")}
    if voiding:
        raise SkippedSpans(
            f"processor run {key} in {work} skipped spans ({counts}): the payload repeats ids "
            "the processor de-duplicates on, so the run measured the skip path; no figure kept"
        )
    return counts
