"""The processor benchmark's peers and mixed payload: valid configurations, every span delivered.

Each system the benchmark compares is started as the benchmark starts it (the real
Collector built from ``collector/builder-config.yaml``, our processor as a process) and
sent a tiny payload; the sink must get every span exactly once and our processor must
skip none.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.fleet import builds

COLLECTOR_KEYS = ["A", "G", "T", "C"]


@pytest.fixture(scope="module")
def bench() -> dict[str, ModuleType]:
    """The benchmark's modules, by their role."""
    from benchmarks.processor import checks, otlp_harness, payloads, phoenix, systems

    return {"harness": otlp_harness, "checks": checks, "payloads": payloads,
            "systems": systems, "phoenix": phoenix}  # fmt: skip


@pytest.fixture(scope="module")
def sink(bench: dict[str, ModuleType]) -> Iterator[object]:
    """The benchmark's sink process (two ports, for the load-balancing Collector)."""
    sink = bench["harness"].Sink(2, 1)
    try:
        yield sink
    finally:
        sink.close()


def _system(bench: dict[str, ModuleType], key: str) -> object:
    systems = bench["systems"]
    if key == "C":
        return systems.balancer_system(str(builds.collector()))
    if key.startswith("B"):
        return systems.processor_system(key, 2.0 if key == "B" else 0.0)
    return systems.collector_system(str(builds.collector()), key)


def _spans(body: bytes) -> list[tuple[str, Span]]:
    request = ExportTraceServiceRequest.FromString(body)
    return [
        (rs.resource.attributes[0].value.string_value, span)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]


def test_the_mix_is_15_percent_genai_spans_of_their_own_service(
    bench: dict[str, ModuleType],
) -> None:
    """The realistic mix holds 15% GenAI spans (the agent's), the rest another service's
    spans without a GenAI attribute, and a pass renames every trace of both."""
    mod = bench["payloads"]
    data = mod.mixed_payloads(3, turns=30)
    spans = [pair for body in data for pair in _spans(body)]
    agent = [span for service, span in spans if service == mod.AGENT]
    assert len(agent) / len(spans) == pytest.approx(mod.GENAI_SHARE, abs=0.005)
    others = [span for service, span in spans if service == mod.OTHER]
    assert len(agent) + len(others) == len(spans) == mod.count_spans(data)
    assert not any(kv.key.startswith(("gen_ai.", "compaction.")) for s in others
                   for kv in s.attributes)  # fmt: skip
    traces = [{s.trace_id for body in data for _, s in _spans(mod.tagged(body, n, 0))}
              for n in (1, 2)]  # fmt: skip
    assert traces[0].isdisjoint(traces[1])


@pytest.mark.slow
@pytest.mark.parametrize("key", COLLECTOR_KEYS)
def test_the_real_collector_validates_each_peer_config(
    bench: dict[str, ModuleType], key: str, tmp_path: Path
) -> None:
    """``otelcol validate`` accepts each Collector system's configuration as the benchmark
    writes it (groupbytrace and tail_sampling are in our build)."""
    argv = _system(bench, key).command(tmp_path, 4317, [4318, 4319])  # type: ignore[attr-defined]
    result = subprocess.run([argv[0], "validate", *argv[1:]], capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("key", ["A", "G", "T", "B"])
def test_each_system_delivers_every_span_once(
    bench: dict[str, ModuleType], sink: object, key: str, tmp_path: Path
) -> None:
    """A tiny run of each system, as the benchmark runs it, delivers every span of two passes
    of the mix exactly once, and our processor skips none as duplicate or late."""
    harness, system = bench["harness"], _system(bench, key)
    data = bench["payloads"].mixed_payloads(2, turns=8)
    with harness.Running(system, tmp_path, sink, 0) as sut:
        for first in (1, 2):
            result = harness.peak(sut, sink, harness.Requests(data, first), total=len(data),
                                  concurrency=2, timeout=30)  # fmt: skip
        if key == "B":
            bench["checks"].check_run(tmp_path, key)
    harness.delivered(sink, result.spans, key)
    assert result.spans == bench["payloads"].count_spans(data)


@pytest.mark.slow
def test_a_run_that_lost_spans_yields_no_figure(bench: dict[str, ModuleType], sink: object) -> None:
    """``delivered`` stops the benchmark when the sink holds fewer (or more) spans than sent."""
    sink.reset()  # type: ignore[attr-defined]
    with pytest.raises(bench["harness"].Undelivered, match="got 0 spans of 5 sent"):
        bench["harness"].delivered(sink, 5, "a lost run")
    bench["harness"].delivered(sink, 0, "an empty run")


def test_phoenix_is_skipped_with_a_message_when_not_installed(
    bench: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Without Phoenix's environment the optional peer yields no figure and says how to
    install it; the benchmark goes on."""
    monkeypatch.setenv("OTEL_COMPACTION_CACHE", str(tmp_path))
    phoenix = bench["phoenix"]
    assert phoenix.measure([], 0) is None
    assert "Phoenix not installed" in capsys.readouterr().out
    assert phoenix.venv_dir().parent == tmp_path / "venvs"
