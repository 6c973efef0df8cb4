"""The parts of the Collector comparison: a sink process, the load, and the systems under test.

Each system under test (SUT) is a child process pinned to one core (``taskset``)
that takes OTLP/gRPC on one port and sends OTLP/gRPC to the sink. The sink is a
second child process and the load comes from this process; both are pinned to
the other core, so the SUT's core does nothing else of ours.

- **Peak** (closed loop): ``concurrency`` senders keep requests in flight until
  a fixed number was accepted (a refused one, ``RESOURCE_EXHAUSTED`` or
  ``UNAVAILABLE``, is sent again after 5 ms); the time and the SUT's CPU
  (``/proc/<pid>/stat``, every thread) from the first send until the sink has
  every span. A system that accepts faster than it processes is charged for
  its backlog too, which a fixed window of sink arrivals would not show.
- **Latency** (open loop): requests sent at a fixed rate without waiting for
  replies; a request's latency is the arrival at the sink of its last span
  minus its send time (the sink finds each request's ``REQUEST_TAG`` in the
  bytes it receives).
- **Delivery**: after each run, once the system has stopped, ``delivered``
  holds the sink's count of spans equal to the spans sent: a system that lost
  or repeated any (a trace evicted, a span sent twice) yields no figure.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from benchmarks.processor.payloads import count_spans, tagged

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_TAG = re.compile(rb"#Q(\d{6})#")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_GRPC_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
REFUSED = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


# ------------------------------------------------------------------------ sink


def _sink_main(control: Connection, ports: int, core: int) -> None:
    """The sink process: counts spans, notes when each request tag last arrived."""
    os.sched_setaffinity(0, {core})
    lock = threading.Lock()
    state: dict[str, Any] = {"spans": 0, "arrivals": {}, "tags": False, "last": 0.0}

    def export(data: bytes, _context: Any) -> bytes:
        request = ExportTraceServiceRequest.FromString(data)
        spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        now = time.monotonic()
        tags = set(_TAG.findall(data)) if state["tags"] else ()
        with lock:
            state["spans"] += spans
            state["last"] = now
            for tag in tags:
                state["arrivals"][int(tag)] = now
        return b""  # an empty ExportTraceServiceResponse

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_GRPC_OPTIONS)
    handler = grpc.unary_unary_rpc_method_handler(export)
    service, method = EXPORT.rsplit("/", 1)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(service.lstrip("/"), {method: handler})]
    )
    bound = [server.add_insecure_port("127.0.0.1:0") for _ in range(ports)]
    server.start()
    control.send(bound)
    while True:
        command = control.recv()
        if command[0] == "reset":
            with lock:
                state.update(spans=0, arrivals={}, tags=command[1], last=0.0)
            control.send(True)
        elif command[0] == "stats":
            with lock:
                stats = (state["spans"], time.monotonic(), dict(state["arrivals"]), state["last"])
                control.send(stats)
        else:
            server.stop(0)
            control.send(True)
            return


class Sink:
    """The sink process and its control pipe."""

    def __init__(self, ports: int, core: int) -> None:
        self._control, child = mp.Pipe()
        self._process = mp.get_context("spawn").Process(
            target=_sink_main, args=(child, ports, core), daemon=True
        )
        self._process.start()
        self.ports: list[int] = self._control.recv()

    def reset(self, tags: bool = False) -> None:
        """Forget what arrived; note request tags from now on when ``tags``."""
        self._control.send(("reset", tags))
        self._control.recv()

    def stats(self) -> tuple[int, float, dict[int, float], float]:
        """Spans received, the sink's monotonic clock now, each request tag's last arrival, and
        the last arrival of any span."""
        self._control.send(("stats",))
        result: tuple[int, float, dict[int, float], float] = self._control.recv()
        return result

    def close(self) -> None:
        """Stop the sink process."""
        self._control.send(("stop",))
        self._control.recv()
        self._process.join(10)


# ------------------------------------------------------------------------ SUTs


@dataclass(frozen=True)
class System:
    """One system under test: how to start it listening on ``port``, sending to ``sinks``."""

    key: str
    label: str
    sinks: int  # how many sink ports it sends to
    command: Callable[[Path, int, list[int]], list[str]]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far, every thread included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


class Running:
    """A started SUT on one core; a context manager that stops it."""

    def __init__(self, system: System, work: Path, sink: Sink, core: int) -> None:
        self.port = _free_port()
        work.mkdir(parents=True, exist_ok=True)
        argv = ["taskset", "-c", str(core), *system.command(work, self.port, sink.ports)]
        self._log = open(work / f"{system.key}.log", "ab")  # noqa: SIM115  # closed in stop
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=_GRPC_OPTIONS)
        self.export = self.channel.unary_unary(EXPORT)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=60)
        except grpc.FutureTimeoutError:
            self.stop()
            raise RuntimeError(f"{system.key} did not listen; see {work}") from None

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 20 s."""
        self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ------------------------------------------------------------------------ load


class Requests:
    """Endless new requests from the templates: pass ``n`` renames every conversation."""

    def __init__(self, templates: Sequence[bytes], first_pass: int) -> None:
        self._templates = templates
        self._spans = [count_spans([t]) for t in templates]
        self._counter = itertools.count()
        self._first = first_pass
        self._lock = threading.Lock()

    def spans_in(self, requests: int) -> int:
        """How many spans the next ``requests`` requests hold (from the first one)."""
        whole, part = divmod(requests, len(self._templates))
        return whole * sum(self._spans) + sum(self._spans[:part])

    def next(self) -> tuple[int, bytes]:
        """A request number (its tag) and its bytes."""
        with self._lock:
            n = next(self._counter)
        pass_no, index = divmod(n, len(self._templates))
        tag = (self._first + n) % 10**6
        return tag, tagged(self._templates[index], (self._first + pass_no) % 10**6, tag)


@dataclass
class Peak:
    """One closed-loop run: a fixed number of spans, from the first send to the last arrival."""

    spans: int
    seconds: float
    spans_per_s: float
    spans_per_cpu_s: float
    cpu_utilisation: float
    refused_requests: int


def peak(sut: Running, sink: Sink, requests: Requests, *, total: int, concurrency: int,
         timeout: float = 600.0) -> Peak:  # fmt: skip
    """Send ``total`` requests as fast as the system takes them (a refused one is sent again
    after 5 ms, as a Collector's exporter retries); the spans per second and per CPU second of
    the system from the first send until the sink has every span."""
    refused, sent = [0], [0]
    lock = threading.Lock()

    def sender() -> None:
        while True:
            with lock:
                if sent[0] >= total:
                    return
                sent[0] += 1
            _, body = requests.next()
            while not _accepted(sut, body):
                refused[0] += 1
                time.sleep(0.005)

    sink.reset()
    spans = requests.spans_in(total)
    cpu0, t0 = cpu_seconds(sut.process.pid), time.monotonic()
    threads = [threading.Thread(target=sender, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    deadline = time.monotonic() + timeout
    while (got := sink.stats())[0] < spans and time.monotonic() < deadline:
        time.sleep(0.02)
    if got[0] < spans:
        raise RuntimeError(f"{got[0]} of {spans} spans reached the sink")
    cpu, wall = max(cpu_seconds(sut.process.pid) - cpu0, 1e-9), got[3] - t0
    return Peak(spans, wall, spans / wall, spans / cpu, cpu / wall, refused[0])


class Undelivered(RuntimeError):
    """The sink did not get exactly the spans sent: the run measured something else."""


def delivered(sink: Sink, expected: int, what: str) -> None:
    """Raise ``Undelivered`` unless the sink holds exactly ``expected`` spans (call it once the
    system under test has stopped, so nothing more is on its way)."""
    got = sink.stats()[0]
    if got != expected:
        raise Undelivered(f"{what}: the sink got {got:,} spans of {expected:,} sent; no figure "
                          "kept")  # fmt: skip


def _accepted(sut: Running, body: bytes) -> bool:
    try:
        sut.export(body, timeout=60)
    except grpc.RpcError as err:
        if err.code() not in REFUSED:
            raise
        return False
    return True


def latencies(sut: Running, sink: Sink, requests: Requests, *, rate: float, warmup: float,
              seconds: float, spans_per_request: int) -> tuple[list[float], int]:  # fmt: skip
    """Open loop at ``rate`` spans/s: each timed request's send → last-span-at-sink time, in
    seconds, and the spans sent in all (warm-up included), once the sink has as many."""
    per_second = rate / spans_per_request
    sink.reset(tags=True)
    sent: dict[int, float] = {}
    calls = []
    start = time.monotonic()
    total = int(per_second * (warmup + seconds))
    for i in range(total):
        target = start + i / per_second
        while (now := time.monotonic()) < target:
            time.sleep(min(0.001, target - now))
        tag, body = requests.next()
        if now - start >= warmup:
            sent[tag] = time.monotonic()
        calls.append(sut.export.future(body, timeout=60))
    refused = sum(1 for call in calls if _refused(call))
    if refused:
        raise RuntimeError(f"{refused} of {len(calls)} requests refused at {rate:.0f} spans/s")
    deadline, spans = time.monotonic() + 30, requests.spans_in(total)
    arrivals: dict[int, float] = {}
    while time.monotonic() < deadline:
        got, _, arrivals, _ = sink.stats()
        if got >= spans and all(tag in arrivals for tag in sent):
            break
        time.sleep(0.05)
    missing = [tag for tag in sent if tag not in arrivals]
    if missing:
        raise RuntimeError(f"{len(missing)} requests never reached the sink")
    return [arrivals[tag] - t for tag, t in sent.items()], spans


def _refused(call: Any) -> bool:
    try:
        call.result()
    except grpc.RpcError as err:
        if err.code() not in REFUSED:
            raise
        return True
    return False
