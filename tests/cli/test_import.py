"""otel-compaction import: to a file, over OTLP/HTTP, replays of OTLP/JSON files, and errors."""

from __future__ import annotations

import argparse
import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otel_compaction.cli import main
from otel_compaction.cli.import_ import make_exporter, traces_url
from tests.transcripts import TESTDATA

BASIC = str(TESTDATA / "claude_basic.jsonl")


def test_import_to_a_file_writes_otlp_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out writes ExportTraceServiceRequest lines with hex ids and says what it wrote."""
    out = tmp_path / "traces.jsonl"
    assert main(["import", BASIC, str(TESTDATA / "codex_rollout.jsonl"), "--out", str(out)]) == 0
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32
    assert int(span["traceId"], 16) > 0
    err = capsys.readouterr().err
    assert "3 conversations (10 turns, 5 compactions) from 2 files" in err


def test_a_target_is_required() -> None:
    """Without --out or --otlp-endpoint the command refuses to run."""
    with pytest.raises(SystemExit) as exc:
        main(["import", BASIC])
    assert exc.value.code == 2


def test_unreadable_input_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not a transcript is named on stderr and the status is 1."""
    bad = str(TESTDATA / "not_a_transcript.jsonl")
    assert main(["import", bad, BASIC, "--out", str(tmp_path / "t.jsonl")]) == 1
    assert f"cannot read {bad}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("https://otel.example/v1/traces", "https://otel.example/v1/traces"),
    ],
)
def test_traces_url(endpoint: str, url: str) -> None:
    """A bare OTLP/HTTP endpoint gets /v1/traces; a full traces URL is kept."""
    assert traces_url(endpoint) == url


class _Collector(BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP traces endpoint that counts the spans it receives."""

    spans: list[int]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        count = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        self.server.spans.append(count)  # type: ignore[attr-defined]
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@pytest.fixture
def collector() -> Iterator[ThreadingHTTPServer]:
    """An OTLP/HTTP endpoint on a free loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.spans = []  # type: ignore[attr-defined]
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.slow
def test_import_over_otlp_http(
    collector: ThreadingHTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The OTel SDK's OTLP/HTTP exporter delivers every span to the endpoint."""
    host, port = collector.server_address[:2]
    endpoint = f"http://{host!s}:{port}"
    assert (
        main(["import", str(TESTDATA / "claude_livelock.jsonl"), "--otlp-endpoint", endpoint]) == 0
    )
    received = sum(collector.spans)  # type: ignore[attr-defined]
    assert received == 93 + 11 + 11 + 1  # turns, compactions, their rediscovery, the root
    assert f"{received} spans written to {endpoint}" in capsys.readouterr().err


@pytest.mark.slow
def test_unreachable_endpoint_exits_one(
    collector: ThreadingHTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spans the endpoint never accepted are counted and the status is 1."""
    host, port = collector.server_address[:2]
    collector.shutdown()
    collector.server_close()
    args = ["import", BASIC, "--otlp-endpoint", f"http://{host!s}:{port}", "--timeout", "0.5"]
    assert main(args) == 1
    assert "spans could not be exported" in capsys.readouterr().err


def test_grpc_protocol_uses_the_grpc_exporter() -> None:
    """--otlp-protocol grpc builds the SDK's gRPC exporter, insecure for http:// endpoints."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    args = argparse.Namespace(
        out=None, otlp_endpoint="http://127.0.0.1:4317", otlp_protocol="grpc", timeout=1.0
    )
    exporter = make_exporter(args)
    try:
        assert isinstance(exporter, OTLPSpanExporter)
    finally:
        exporter.shutdown()


def test_unwritable_out_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An --out path in a missing directory fails at once with a message, not a traceback."""
    target = tmp_path / "missing" / "traces.jsonl"
    assert main(["import", BASIC, "--out", str(target)]) == 1
    assert "otel-compaction import:" in capsys.readouterr().err


def _file_requests(path: Path) -> list[trace_service_pb2.ExportTraceServiceRequest]:
    from otel_compaction.otlp.decode import Signal, parse_json

    lines = path.read_bytes().splitlines()
    return [parse_json(Signal.TRACES, line) for line in lines if line.strip()]


@pytest.mark.slow
def test_otlp_json_file_with_an_endpoint_is_replayed_unchanged(
    tmp_path: Path, collector: ThreadingHTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """An OTLP/JSON file (here one import --out wrote) is sent on request by request, as it is."""
    traces = tmp_path / "traces.jsonl"
    assert main(["import", BASIC, "--out", str(traces)]) == 0
    capsys.readouterr()
    host, port = collector.server_address[:2]
    endpoint = f"http://{host!s}:{port}"
    assert main(["import", str(traces), "--otlp-endpoint", endpoint]) == 0
    expected = _file_requests(traces)
    assert collector.spans == [  # type: ignore[attr-defined]
        sum(len(ss.spans) for rs in r.resource_spans for ss in rs.scope_spans) for r in expected
    ]
    assert collector.bodies == [r.SerializeToString() for r in expected]  # type: ignore[attr-defined]
    err = capsys.readouterr().err
    assert f"1 OTLP/JSON file replayed: {sum(collector.spans)} spans written to" in err  # type: ignore[attr-defined]


def test_otlp_json_file_with_out_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --out an OTLP/JSON file is refused, and the message says --otlp-endpoint replays it."""
    traces = tmp_path / "traces.jsonl"
    assert main(["import", BASIC, "--out", str(traces)]) == 0
    capsys.readouterr()
    assert main(["import", str(traces), "--out", str(tmp_path / "again.jsonl")]) == 1
    assert "already OTLP/JSON spans: nothing to convert (--otlp-endpoint replays it)" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_otlp_json_replay_over_grpc_reaches_the_processor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--otlp-protocol grpc replays into a real OTLP/gRPC receiver (the processor's)."""
    from tests.processor.service_util import running, wait_for

    traces = tmp_path / "traces.jsonl"
    assert main(["import", BASIC, "--out", str(traces)]) == 0
    spans = sum(
        len(ss.spans)
        for r in _file_requests(traces)
        for rs in r.resource_spans
        for ss in rs.scope_spans
    )
    with running(tmp_path / "processor", processing={"reorder_window_seconds": 0.0}) as (
        service, _out,
    ):  # fmt: skip
        assert service.grpc is not None
        endpoint = f"http://127.0.0.1:{service.grpc.port}"
        args = ["import", str(traces), "--otlp-endpoint", endpoint, "--otlp-protocol", "grpc"]
        assert main(args) == 0
        assert wait_for(lambda: len(service.pipeline.state.registry) == 2)
    assert f"{spans} spans written to {endpoint}" in capsys.readouterr().err
