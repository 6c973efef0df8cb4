"""The processor's compaction metrics name the compaction span they came from."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.metrics import Exemplar

from otel_compaction import semconv as sc
from tests.processor.conftest import metrics_pipeline
from tests.processor.golden import TESTDATA, read_requests


def _span_of(exemplar: Exemplar) -> tuple[bytes, bytes]:
    """The (trace id, span id) an exemplar names; it must name one."""
    assert exemplar.trace_id is not None
    assert exemplar.span_id is not None
    return exemplar.trace_id.to_bytes(16, "big"), exemplar.span_id.to_bytes(8, "big")


def test_compaction_metric_exemplars_carry_the_compaction_spans(tmp_path: Path) -> None:
    """Each exemplar of the compaction counter is one of the input's compaction spans."""
    pipeline, reader = metrics_pipeline(tmp_path)
    compaction_spans = set()
    for signal, request in read_requests(TESTDATA / "livelock_004.traces.jsonl"):
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                compaction_spans |= {
                    (s.trace_id, s.span_id) for s in ss.spans if s.name == sc.SPAN_COMPACTION
                }
        pipeline.submit(signal, request, "grpc", request.SerializeToString())
        pipeline.step()
    pipeline.drain()
    data = reader.get_metrics_data()
    assert data is not None
    exemplars = [
        e
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == sc.METRIC_COMPACTIONS.name
        for p in metric.data.data_points
        for e in p.exemplars
    ]
    assert exemplars
    named = {_span_of(e) for e in exemplars}
    assert named <= compaction_spans
