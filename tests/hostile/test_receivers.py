"""The receivers under slow, smuggled, oversized and odd gzip bodies."""

from __future__ import annotations

import gzip
import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2

from otel_compaction.otlp.decode import PROTOBUF, DecodeError, Signal, decompress
from otel_compaction.processor.service import ProcessorService
from tests.hostile.inputs import counter, trace_request, turn
from tests.processor.service_util import running, wait_for

pytestmark = pytest.mark.slow

LIMIT = 65536
PB = {"Content-Type": PROTOBUF}
REJECTED = "compaction_processor_rejected_total"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessorService]:
    """One service with a small body limit (tap mode, nothing forwarded)."""
    tmp = tmp_path_factory.mktemp("receivers")
    with running(tmp, receivers={"max_request_bytes": LIMIT}) as (svc, _):
        yield svc


def _post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/v1/traces", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _rejected(svc: ProcessorService, reason: str, signal: str = "traces") -> float:
    exposition = svc.metrics.exposition()
    return counter(exposition, REJECTED, compaction_processor_reason=reason,
                   compaction_processor_signal=signal)  # fmt: skip


def _six_spans() -> tuple[bytes, bytes]:
    first = trace_request(*(turn("gz", n, 100 * n) for n in range(1, 4)), seed=7)
    second = trace_request(*(turn("gz", n, 100 * n) for n in range(4, 7)), seed=8)
    return first.SerializeToString(), second.SerializeToString()


# ------------------------------------------- gzip bodies of several members


def test_every_gzip_member_is_read() -> None:
    """Two concatenated gzip members decode to both members' bytes (as gzip -d gives)."""
    one, two = _six_spans()
    assert decompress(gzip.compress(one) + gzip.compress(two), "gzip", LIMIT) == one + two


@pytest.mark.parametrize("tail", [b"garbage", b"\x1f\x8b", b"\0" * 4])
def test_bytes_after_the_gzip_stream_are_refused(tail: bytes) -> None:
    """Trailing bytes that are no further gzip member are a 400 naming them."""
    one, _ = _six_spans()
    with pytest.raises(DecodeError) as info:
        decompress(gzip.compress(one) + tail, "gzip", LIMIT)
    assert info.value.status == 400
    assert "after the gzip" in info.value.reason or "truncated" in info.value.reason


def test_members_together_are_bounded_by_the_limit() -> None:
    """The limit holds for the sum of the members, not for each one."""
    member = gzip.compress(b"\0" * (LIMIT // 2 + 1))
    with pytest.raises(DecodeError) as info:
        decompress(member + member, "gzip", LIMIT)
    assert info.value.status == 413


def test_a_two_member_gzip_body_delivers_all_six_spans(service: ProcessorService) -> None:
    """A body of two gzip members (six spans) is received as six spans."""
    assert service.http is not None
    one, two = _six_spans()
    before = counter(service.metrics.exposition(), "compaction_processor_received_total")
    body = gzip.compress(one) + gzip.compress(two)
    status, _ = _post(service.http.port, body, {**PB, "Content-Encoding": "gzip"})
    assert status == 200
    after = counter(service.metrics.exposition(), "compaction_processor_received_total")
    assert after - before == 6


def test_garbage_after_a_gzip_body_is_a_400_with_the_reason(service: ProcessorService) -> None:
    """A gzip body followed by garbage is refused with a status naming the trailing bytes."""
    assert service.http is not None
    one, _ = _six_spans()
    body = gzip.compress(one) + b"trailing garbage"
    status, payload = _post(service.http.port, body, {**PB, "Content-Encoding": "gzip"})
    assert status == 400
    assert "after the gzip" in status_pb2.Status.FromString(payload).message


# -------------------------------------------- oversized and smuggled bodies


def test_a_grpc_request_over_the_limit_is_counted_as_too_large(service: ProcessorService) -> None:
    """gRPC's own size refusal shows in rejected_total{reason="too_large"}, as the docs say."""
    assert service.grpc is not None
    before = _rejected(service, "too_large")
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        export = channel.unary_unary(f"/{Signal.TRACES.spec.service}/Export")
        with pytest.raises(grpc.RpcError) as info:
            export(b"\x0a" + b"\x00" * (LIMIT + 10), timeout=10)
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert wait_for(lambda: _rejected(service, "too_large") == before + 1)


def test_a_grpc_request_within_the_limit_is_still_accepted(service: ProcessorService) -> None:
    """The size accounting leaves ordinary gRPC exports as they were."""
    assert service.grpc is not None
    one, _ = _six_spans()
    with grpc.insecure_channel(f"127.0.0.1:{service.grpc.port}") as channel:
        export = channel.unary_unary(f"/{Signal.TRACES.spec.service}/Export")
        assert export(one, timeout=10) == b""


def test_a_413_reaches_a_client_that_sends_its_whole_body(service: ProcessorService) -> None:
    """A client sending a body well over the limit reads the 413 instead of a reset."""
    assert service.http is not None
    body = b"x" * (LIMIT * 64)  # 4 MiB: a broken pipe on main
    status, payload = _post(service.http.port, body, PB)
    assert status == 413
    assert "exceeds" in status_pb2.Status.FromString(payload).message


def _raw(port: int, head: bytes, body: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_content_length_with_chunked_transfer_encoding_is_refused(
    service: ProcessorService,
) -> None:
    """Both framings at once (request smuggling behind a proxy) get a 400 naming them."""
    assert service.http is not None
    one, _ = _six_spans()
    chunked = f"{len(one):x}\r\n".encode() + one + b"\r\n0\r\n\r\n"
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {len(chunked)}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    reply = _raw(service.http.port, head, chunked)
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"Transfer-Encoding" in reply


def test_two_content_lengths_are_refused(service: ProcessorService) -> None:
    """Two Content-Length headers are ambiguous framing: 400."""
    assert service.http is not None
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        "Content-Length: 0\r\nContent-Length: 5\r\n\r\n"
    ).encode()
    assert _raw(service.http.port, head, b"abcde").startswith(b"HTTP/1.1 400 ")


# --------------------------------------------------------- slow connections


def _slow_connection(port: int, length: int = 100_000) -> socket.socket:
    """A client that sent full headers announcing ``length`` bytes and then one body byte."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    sock.sendall(head + b"\x0a")
    return sock


def test_sixteen_slow_bodies_do_not_lock_out_a_normal_client(tmp_path: Path) -> None:
    """With every handler slot's worth of trickling bodies open, a normal export gets 200."""
    with running(tmp_path) as (svc, _):
        assert svc.http is not None
        slow = [_slow_connection(svc.http.port) for _ in range(16)]
        try:
            one, _ = _six_spans()
            port = svc.http.port
            assert _post(port, one, PB)[0] == 200
        finally:
            for sock in slow:
                sock.close()


def _read_reply(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except OSError:
        pass
    return b"".join(chunks)


def _shed(svc: ProcessorService, reason: str) -> float:
    return counter(svc.metrics.exposition(), "compaction_processor_connections_shed_total",
                   compaction_processor_reason=reason)  # fmt: skip


def test_a_request_not_received_within_its_deadline_is_cut_and_counted(tmp_path: Path) -> None:
    """A body still trickling at the request deadline gets 408 and a closed connection, counted."""
    receivers = {"request_timeout_seconds": 0.5}
    with running(tmp_path, receivers=receivers) as (svc, _):
        assert svc.http is not None
        sock = _slow_connection(svc.http.port)
        reply = _read_reply(sock)  # the server ends it: no timing is asserted
        sock.close()
        assert reply.startswith(b"HTTP/1.1 408 ")
        assert wait_for(lambda: _shed(svc, "request_timeout") == 1)


def test_headers_trickled_past_the_deadline_are_cut_too(tmp_path: Path) -> None:
    """A request whose headers never end is closed at the deadline, not held open."""
    receivers = {"request_timeout_seconds": 0.5}
    with running(tmp_path, receivers=receivers) as (svc, _):
        assert svc.http is not None
        sock = socket.create_connection(("127.0.0.1", svc.http.port), timeout=10)
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        reply = _read_reply(sock)
        sock.close()
        assert reply == b"" or reply.startswith(b"HTTP/1.1 408 ")
        assert wait_for(lambda: _shed(svc, "request_timeout") == 1)


def test_connections_over_the_per_peer_cap_are_refused_and_counted(tmp_path: Path) -> None:
    """One peer holding its cap of connections gets 503 on the next one; others were served."""
    receivers = {"max_connections_per_peer": 4}
    with running(tmp_path, receivers=receivers) as (svc, _):
        assert svc.http is not None
        port = svc.http.port
        held = [_slow_connection(port) for _ in range(4)]
        try:
            assert wait_for(lambda: svc.http is not None and svc.http.connections() == 4)
            extra = socket.create_connection(("127.0.0.1", port), timeout=10)
            reply = _read_reply(extra)
            extra.close()
            assert reply.startswith(b"HTTP/1.1 503 ")
            assert _shed(svc, "peer_connections") == 1
        finally:
            for sock in held:
                sock.close()
        assert wait_for(lambda: svc.http is not None and svc.http.connections() == 0)
        one, _ = _six_spans()
        assert _post(port, one, PB)[0] == 200
