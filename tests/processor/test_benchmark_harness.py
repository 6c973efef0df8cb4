"""The processor benchmark's payloads and report (the benchmark itself is no test)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction import semconv as sc
from otel_compaction.otlp.decode import Signal, parse_protobuf
from otel_compaction.processor.admin import AdminServer
from otel_compaction.processor.telemetry import ProcessorMetrics
from otel_compaction.semconv import ProcessorReason
from tests.processor.conftest import PipelineFactory

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@pytest.fixture(scope="module")
def bench() -> dict[str, ModuleType]:
    """The benchmark's modules, by their role."""
    from benchmarks.processor import checks, otlp_harness, payloads, report, throughput

    return {"payloads": payloads, "harness": otlp_harness, "report": throughput, "checks": checks,
            "report_module": report}  # fmt: skip


def _conversations(body: bytes) -> set[str]:
    request = ExportTraceServiceRequest.FromString(body)
    return {
        kv.value.string_value
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
        for kv in span.attributes
        if kv.key == sc.CONVERSATION_ID
    }


def test_each_pass_is_new_conversations_and_traces(bench: dict[str, ModuleType]) -> None:
    """Renaming a request for another pass keeps it valid and changes every id the processor
    keys on, and the request tag names the request."""
    mod = bench["payloads"]
    template = mod.payloads(3, turns=4)[0]
    first, second = mod.tagged(template, 1, 10), mod.tagged(template, 2, 11)
    assert len(first) == len(second) == len(template)
    assert _conversations(first).isdisjoint(_conversations(second))
    traces = [
        {s.trace_id for s in ExportTraceServiceRequest.FromString(b).resource_spans[0]
         .scope_spans[0].spans}
        for b in (first, second)
    ]  # fmt: skip
    assert traces[0].isdisjoint(traces[1])
    assert b"#Q000011#" in second
    requests = bench["harness"].Requests([template, template], first_pass=5)
    assert requests.spans_in(3) == 3 * mod.count_spans([template])
    assert requests.next()[0] == 5


def _results(per_cpu: dict[str, dict[str, float]], p99: dict[str, float]) -> dict[str, Any]:
    """Results of three rounds whose medians are the figures given (the others far off)."""

    def rounds(key: str, value: float) -> list[dict[str, float]]:
        return [{key: value / 10}, {key: value}, {key: value * 10}]

    return {
        "peak": {name: {k: rounds("spans_per_cpu_s", v) for k, v in systems.items()}
                 for name, systems in per_cpu.items()},
        "latency": {k: rounds("p99_ms", v) for k, v in p99.items()},
    }  # fmt: skip


def test_the_report_judges_each_target_on_the_medians_of_one_run(
    bench: dict[str, ModuleType],
) -> None:
    """Each of the six targets is met or not by the medians of the rounds: B against the
    lower of tail_sampling and groupbytrace on all-GenAI, against the pass-through on the mix,
    B's p99 against groupbytrace's, B0's against the pass-through's; and the two held in place
    of the throughput ones: B against both stateful Collectors on the mix, and 100 times
    Phoenix on all-GenAI (not measured without Phoenix)."""
    report = bench["report_module"]
    genai = {"A": 100.0, "G": 50.0, "T": 60.0, "B": 55.0}
    p99 = {"A": 200.0, "G": 2_100.0, "B": 2_050.0, "B0": 250.0}
    mix = {"A": 100.0, "G": 70.0, "T": 110.0, "B": 120.0}
    results = _results({"genai": genai, "mix": mix}, p99)
    assert [t.met for t in report.targets(results)] == [False, True, True, False, True, None]
    results = _results({"genai": {**genai, "B": 60.0}, "mix": {**mix, "B": 90.0}},
                       {**p99, "B": 2_200.0, "B0": 200.0})  # fmt: skip
    results["phoenix"] = {"spans_per_cpu_s": 0.6}
    judged = report.targets(results)
    assert [t.met for t in judged] == [True, False, False, True, False, True]
    assert judged[0].line().endswith("**met**, B 60 against T 60 and G 50 (100% of the higher).")
    assert judged[5].line().endswith("**met**, B 60 against P 1 (100x).")
    results["phoenix"] = {"spans_per_cpu_s": 0.61}
    assert report.targets(results)[5].met is False


def test_the_saved_run_renders_every_payload_peer_and_target(
    bench: dict[str, ModuleType],
) -> None:
    """The results file of record renders both payloads' tables, Phoenix's line (or why it is
    absent) and the six target lines, each met or not."""
    report = bench["report_module"]
    results = json.loads((RESULTS / "processor_throughput.json").read_text())
    text = report.markdown(results)
    assert "**All-GenAI payload**" in text
    assert "**Realistic mix** (15% GenAI spans)" in text
    assert sum(line.startswith("- ") and "met**" in line for line in text.splitlines()) == 6
    assert "(P) Arize Phoenix 20.26.1" in text
    assert "(P) Arize Phoenix: not installed" in report.markdown({**results, "phoenix": None})


def test_the_profile_stages_name_functions_that_exist(bench: dict[str, ModuleType]) -> None:
    """``--profile`` attributes samples to processor internals: each still exists where named
    (a class's stage matches any of its methods)."""
    frames = bench["report"].stage_frames()
    assert list(frames) == list(bench["report"].STAGES)
    assert frames["forwarding (queue reads, gRPC client)"] == "Forwarder."


def test_a_profile_stage_that_moved_is_named(
    bench: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage whose method is gone stops the profile with its dotted name."""
    stages = {"gone": ("otel_compaction.processor.pipeline", "Pipeline.no_such_method")}
    monkeypatch.setattr(bench["report"], "STAGES", stages)
    with pytest.raises(LookupError, match=r"pipeline\.Pipeline\.no_such_method \(gone\)"):
        bench["report"].stage_frames()


def test_benchmark_passes_have_no_duplicate_or_late_span(
    bench: dict[str, ModuleType], pipeline_factory: PipelineFactory,
    processor_metrics: ProcessorMetrics,
) -> None:  # fmt: skip
    """The warm-up pass and two timed passes of the benchmark's requests, through the
    processor's pipeline as the benchmark sends them, are each applied: no item is skipped as
    ``duplicate`` or ``late`` (every pass's spans are new, the warm-up's included)."""
    templates = bench["payloads"].payloads(4, turns=16)
    pipeline, _ = pipeline_factory("enrich", metrics=processor_metrics)
    for first in (900_000, 1, 1001):
        requests = bench["harness"].Requests(templates, first_pass=first)
        for _ in range(len(templates)):
            _tag, body = requests.next()
            pipeline.submit(Signal.TRACES, parse_protobuf(Signal.TRACES, body), "grpc", body)
        pipeline.drain()
    assert bench["checks"].skipped(processor_metrics.exposition()) == {"duplicate": 0.0,
                                                                       "late": 0.0}  # fmt: skip
    assert len(pipeline.state.registry) == 3 * 4


def test_a_run_with_skipped_spans_is_refused(
    bench: dict[str, ModuleType], processor_metrics: ProcessorMetrics, tmp_path: Path
) -> None:
    """The benchmark stops, naming the counts, when the processor it measured skipped spans."""
    processor_metrics.rejected(Signal.TRACES, ProcessorReason.DUPLICATE, 12_800)
    server = AdminServer("127.0.0.1", 0, exposition=processor_metrics.exposition, status=dict)
    server.start()
    try:
        (tmp_path / "processor-B.metrics-port").write_text(str(server.port))
        with pytest.raises(bench["checks"].SkippedSpans, match=r"'duplicate': 12800\.0"):
            bench["checks"].check_run(tmp_path, "B")
    finally:
        server.stop()
