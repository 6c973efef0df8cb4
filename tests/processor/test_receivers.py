"""The receivers over real sockets: the OTel SDK's own exporters as clients, OTLP errors."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_compaction import semconv as sc
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.service import ProcessorService
from tests.processor.downstream import Downstream, free_port
from tests.processor.golden import TESTDATA
from tests.processor.scenarios import SCENARIOS, render
from tests.processor.service_util import running, wait_for

pytestmark = pytest.mark.slow


def _oracle(name: str) -> list[dict[str, Any]]:
    return list(json.loads((TESTDATA / f"{name}.findings.json").read_text()))


def _findings(out: Any) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    return sorted(rows, key=lambda d: json.dumps(d, sort_keys=True))


def _post(
    port: int, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_sdk_exporters_over_grpc_and_http_reach_the_in_process_verdicts(tmp_path: Path) -> None:
    """Spans sent by the SDK's OTLP/gRPC and OTLP/HTTP exporters give the oracle's findings,
    and the finding spans reach the next hop as children of the flagged compaction span, in a
    scope that names our semantic-conventions schema."""
    downstream = Downstream(free_port())
    downstream.start()
    forward = {"endpoint": f"127.0.0.1:{downstream.port}"}
    try:
        with running(tmp_path, forward=forward, processing={"reorder_window_seconds": 0.05}) as (
            service, out,
        ):  # fmt: skip
            assert service.grpc is not None
            assert service.http is not None
            boundary = render("boundary_000", SCENARIOS["boundary_000"](), 1)
            livelock = render("livelock_004", SCENARIOS["livelock_004"](), 2)
            grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True)
            http_exporter = HttpExporter(endpoint=f"http://127.0.0.1:{service.http.port}/v1/traces")
            assert grpc_exporter.export(boundary.spans) is SpanExportResult.SUCCESS
            assert http_exporter.export(livelock.spans) is SpanExportResult.SUCCESS
            expected = sorted(_oracle("boundary_000") + _oracle("livelock_004"),
                              key=lambda d: json.dumps(d, sort_keys=True))  # fmt: skip
            assert wait_for(lambda: _findings(out) == expected)
            assert wait_for(lambda: len(downstream.spans()) == len(expected))
        compaction = next(s for s in boundary.spans if s.name == "compaction")
        finding = next(s for s in downstream.spans() if s.parent_span_id)
        boundary_findings = [s for s in downstream.spans() if s.trace_id == finding.trace_id]
        assert any(s.parent_span_id == compaction.context.span_id.to_bytes(8, "big")
                   for s in boundary_findings)  # fmt: skip
        scopes = {
            ss.schema_url
            for signal, request in downstream.received
            if signal is Signal.TRACES
            for rs in request.resource_spans
            for ss in rs.scope_spans
        }
        assert scopes == {sc.SCHEMA_URL}
    finally:
        downstream.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One running service with a bearer token, a small body limit and a tiny window."""
    tmp = tmp_path_factory.mktemp("guarded")
    with running(
        tmp,
        receivers={"auth": {"bearer_token": "s3cret"}, "max_request_bytes": 65536},
        processing={"reorder_window_seconds": 0.5, "max_pending_items": 50},
    ) as (service, _out):
        yield service


AUTH = {"Authorization": "Bearer s3cret"}
PB = {"Content-Type": "application/x-protobuf", **AUTH}


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "reason"),
    [
        ("/v1/traces", b"\xff\xff", PB, 400, "malformed protobuf"),
        ("/v1/traces", b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}',
         {"Content-Type": "application/json", **AUTH}, 400, "must be hex"),
        ("/v1/traces", b"x" * 70_000, PB, 413, "exceeds"),
        ("/v1/traces", b"x", {"Content-Type": "text/csv", **AUTH}, 415, "Content-Type"),
        ("/v1/traces", b"", {"Content-Type": "application/x-protobuf"}, 401, "bearer"),
        ("/v1/traces", b"", {**PB, "Authorization": "Bearer nope"}, 401, "bearer"),
        ("/v2/traces", b"", PB, 404, "no OTLP endpoint"),
    ],
)  # fmt: skip
def test_http_errors_carry_a_status_and_a_reason(
    guarded: ProcessorService, path: str, body: bytes, headers: dict[str, str], status: int,
    reason: str,
) -> None:  # fmt: skip
    """Each refusal has the OTLP status code and a ``google.rpc.Status`` naming the problem."""
    assert guarded.http is not None
    code, got_headers, payload = _post(guarded.http.port, path, body, headers)
    assert code == status
    if got_headers.get("Content-Type") == "application/json":
        message = json.loads(payload)["message"]
    else:
        message = status_pb2.Status.FromString(payload).message
    assert reason in message


def test_http_json_request_gets_a_json_response(guarded: ProcessorService) -> None:
    """An OTLP/JSON request is answered 200 with an OTLP/JSON response."""
    assert guarded.http is not None
    line = (TESTDATA / "healthy.traces.jsonl").read_text().splitlines()[0].encode()
    code, headers, payload = _post(
        guarded.http.port, "/v1/traces", line, {"Content-Type": "application/json", **AUTH}
    )
    assert (code, headers["Content-Type"]) == (200, "application/json")
    assert json.loads(payload) == {}


def test_overload_answers_429_with_retry_after_then_recovers(guarded: ProcessorService) -> None:
    """A full reorder window gets 429 + Retry-After; the memory stays bounded; it recovers."""
    assert guarded.http is not None
    lines = (TESTDATA / "livelock_004.traces.jsonl").read_text().splitlines()
    statuses = []
    for line in lines:
        code, headers, _ = _post(
            guarded.http.port,
            "/v1/traces",
            line.encode(),
            {"Content-Type": "application/json", **AUTH},
        )
        statuses.append(code)
        if code == 429:
            assert int(headers["Retry-After"]) >= 1
        assert guarded.pipeline.state.pending <= 50
    assert 429 in statuses
    assert wait_for(lambda: guarded.pipeline.state.pending == 0)
    code, _, _ = _post(
        guarded.http.port,
        "/v1/traces",
        lines[0].encode(),
        {"Content-Type": "application/json", **AUTH},
    )
    assert code == 200


def _grpc_call(port: int, data: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> Any:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(
            f"/{Signal.TRACES.spec.service}/Export",
            request_serializer=None,
            response_deserializer=None,
        )
        return export(data, metadata=metadata, timeout=10)


def test_grpc_errors_carry_codes_and_retry_info(guarded: ProcessorService) -> None:
    """gRPC: bad token UNAUTHENTICATED, garbage INVALID_ARGUMENT, overload RESOURCE_EXHAUSTED
    with the RetryInfo trailer the OTel exporters read."""
    assert guarded.grpc is not None
    port = guarded.grpc.port
    auth = (("authorization", "Bearer s3cret"),)
    with pytest.raises(grpc.RpcError) as info:
        _grpc_call(port, b"")
    assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as info:
        _grpc_call(port, b"\xff\xff\xff", auth)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed protobuf" in info.value.details()
    request = next(iter(_requests("livelock_004")))
    codes = []
    for _ in range(20):
        try:
            _grpc_call(port, request.SerializeToString(), auth)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as err:
            codes.append(err.code())
            trailers = dict(err.trailing_metadata())
            retry = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
            assert retry.retry_delay.seconds >= 1
            break
    assert codes[-1] is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert wait_for(lambda: guarded.pipeline.state.pending == 0)


def _requests(name: str) -> list[Any]:
    from tests.processor.golden import read_requests

    return [r for _, r in read_requests(TESTDATA / f"{name}.traces.jsonl")]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(st.binary(max_size=300), st.text(max_size=100).map(str.encode)),
    ctype=st.sampled_from(["application/x-protobuf", "application/json", "text/plain"]),
    encoding=st.sampled_from([None, "gzip", "deflate", "compress"]),
    path=st.sampled_from(["/v1/traces", "/v1/metrics", "/v1/logs"]),
)
def test_fuzzed_http_requests_get_200_or_4xx_and_the_server_keeps_serving(
    guarded: ProcessorService, body: bytes, ctype: str, encoding: str | None, path: str
) -> None:
    """No body, content type or encoding makes the receiver answer 5xx or stop serving."""
    assert guarded.http is not None
    headers = {"Content-Type": ctype, **AUTH}
    if encoding:
        headers["Content-Encoding"] = encoding
    code, _, _ = _post(guarded.http.port, path, body, headers)
    assert code == 200 or 400 <= code < 500


def test_tls_round_trip_over_both_transports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With TLS configured, the SDK exporters connect over gRPC and HTTP with the CA."""
    trustme = pytest.importorskip("trustme")
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)  # requests lets these beat the exporter's CA
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    tls = {"tls": {"cert_file": str(cert_file), "key_file": str(key_file)}}
    spans = render("healthy", SCENARIOS["healthy"](), 3).spans
    with running(tmp_path, receivers=tls) as (service, _out):
        assert service.grpc is not None
        assert service.http is not None
        creds = grpc.ssl_channel_credentials(root_certificates=ca_file.read_bytes())
        grpc_exporter = GrpcExporter(endpoint=f"localhost:{service.grpc.port}", credentials=creds)
        http_exporter = HttpExporter(
            endpoint=f"https://127.0.0.1:{service.http.port}/v1/traces",
            certificate_file=str(ca_file),
        )
        assert grpc_exporter.export(spans) is SpanExportResult.SUCCESS
        assert http_exporter.export(spans) is SpanExportResult.SUCCESS
        assert wait_for(lambda: len(service.pipeline.state.registry) == 1)
