"""Enrich mode forwards requests as received and re-encodes only the spans it flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction.otlp.attributes import key_values
from otel_compaction.otlp.decode import Signal
from otel_compaction.otlp.spanview import splice_spans
from otel_compaction.processor import batches as batches_module
from tests.processor.conftest import PipelineFactory
from tests.processor.golden import TESTDATA, read_requests


def _ready(pipeline: Any) -> list[bytes]:
    assert pipeline.queue is not None
    return [p.read_bytes() for p in sorted(pipeline.queue.directory.glob("*.ready"))]


def _uncanonical(request: ExportTraceServiceRequest) -> bytes:
    """A valid encoding protobuf would not write: an empty ``resource`` repeated (merged away)."""
    out = b""
    for rs in request.resource_spans:
        inner = rs.SerializeToString() + b"\x0a\x00"
        out += b"\x0a" + _varint(len(inner)) + inner
    return out


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _run(factory: PipelineFactory, bodies: list[bytes], tmp: Path) -> list[bytes]:
    pipeline, _ = factory("enrich", forward={"queue": {"directory": str(tmp)}})
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        pipeline.submit(Signal.TRACES, request, "grpc", body)
        pipeline.step()
    pipeline.drain()
    return _ready(pipeline)


# (requests in which the processor rewrote a compaction span's flags, others).
REWRITTEN = {"boundary_000": (1, 5), "livelock_004": (2, 8), "healthy": (0, 9)}


@pytest.mark.parametrize("name", sorted(REWRITTEN))
def test_forwarded_requests_equal_the_fully_reencoded_ones(
    name: str,
    pipeline_factory: PipelineFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unchanged requests leave byte for byte; spliced ones parse as the whole re-encoding."""
    # Received bytes that are not protobuf's own encoding show that an untouched
    # request is passed on as it came, not encoded again.
    requests = [r for _, r in read_requests(TESTDATA / f"{name}.traces.jsonl")]
    bodies = [_uncanonical(r) for r in requests]
    got = _run(pipeline_factory, bodies, tmp_path / "new")
    # The reference: every processed request encoded again, whole (as before).
    monkeypatch.setattr(batches_module, "_output", lambda b, q: b.request.SerializeToString())
    reference = _run(pipeline_factory, bodies, tmp_path / "old")
    assert len(got) == len(reference) == len(bodies)
    passed_on = 0
    for body, out, ref in zip(bodies, got, reference, strict=True):
        assert ExportTraceServiceRequest.FromString(out) == ExportTraceServiceRequest.FromString(
            ref
        )
        if out == body:
            assert ref != body  # the old output: encoded again
            passed_on += 1
    assert (len(bodies) - passed_on, passed_on) == REWRITTEN[name]


def test_splice_keeps_every_other_field_as_it_came() -> None:
    """Resources, scopes, schema URLs and the other spans survive; the given spans are replaced."""
    request = ExportTraceServiceRequest()
    for r in range(2):
        rs = request.resource_spans.add(schema_url=f"resource-{r}")
        rs.resource.attributes.extend(key_values({"service.name": f"agent-{r}"}))
        for s in range(2):
            ss = rs.scope_spans.add(schema_url=f"scope-{s}")
            ss.scope.name = f"lib-{s}"
            for k in range(3):
                ss.spans.add(name=f"span {r}.{s}.{k}", span_id=bytes([r, s, k]) * 2 + b"\x01\x02")
    expected = ExportTraceServiceRequest()
    expected.CopyFrom(request)
    replaced = {}
    for i, j, k in ((0, 1, 2), (1, 0, 0)):
        span = expected.resource_spans[i].scope_spans[j].spans[k]
        span.attributes.extend(key_values({"compaction.flag.boundary": True}))
        replaced[(i, j, k)] = span.SerializeToString()
    out = splice_spans(request.SerializeToString(), replaced)
    assert ExportTraceServiceRequest.FromString(out) == expected
