"""The processor reaches the agent's verdicts from the spans of generated agents.

Each run is played through the real clients under the instrumentation; its spans are
encoded as the OTLP exporter encodes them and fed to the processor's pipeline (tap
mode, the run's windows as its thresholds' window table), and every finding, reason
included, must equal one the agent process raised, and the other way round. The runs
are the ones whose verdicts depend on sizes the processor rebuilds from the spans:
the size a compaction fired at (a turn summarized unsent), ineffective compactions
judged against the trigger, and the livelock of two ineffective in a row.

Without content capture the summary's text is not on the spans, so schema coverage
is the one verdict the processor cannot reach (docs/processor.md, "The same verdicts
as the agent"); with capture on, it reaches that one too. A short run is judged when
the run ends (the agent's at uninstrument()); the processor, which never sees a run
end but an idle one, does not judge it yet: it is left out of the comparison.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.semconv import FindingKind
from tests.processor.conftest import make_config

RUNS = [
    "tail_rewrite:56",  # boundary at the size fired at
    "whole_history:46",
    "livelock_run:107",  # ineffective, no-progress livelock, lossy one call later
    "fixed_prefix:3",
    "server_side:2",
]


NEEDS_TEXT = FindingKind.SUMMARY_SCHEMA_COVERAGE.value
AT_RUN_END = FindingKind.SHORT_RUN_COMPACTION.value


def _key(finding: dict[str, Any]) -> tuple[str, int, str, str]:
    return (finding["kind"], finding["turn"], finding["rule"], finding["reason"])


@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
@pytest.mark.parametrize("name", RUNS)
def test_the_processor_reaches_the_agents_verdicts(
    name: str, capture: bool, tmp_path: Path
) -> None:
    """Same findings, reasons included, in the agent and in the processor fed its spans."""
    from benchmarks.truth.classes import CLASSES
    from benchmarks.truth.run import SCHEMA_TEMPLATE, instrumented, model_windows

    cls, index = name.rsplit(":", 1)
    truth = CLASSES[cls]
    seed = f"1:{cls}:{index}"
    with instrumented(truth.build, seed, truth.wires, content=capture) as (run, cap):
        spans = list(cap.spans)
        agent = sorted(
            _key(f.to_json())
            for f in cap.findings
            if (capture or f.kind.value != NEEDS_TEXT) and f.kind.value != AT_RUN_END
        )
    detectors = {"model_windows": model_windows(run), "schema_template": SCHEMA_TEMPLATE}
    config = make_config(tmp_path, "tap", detectors=detectors)
    assert config.forward.queue.directory is not None
    out = io.StringIO()
    pipeline = Pipeline(
        config, queue=PersistentQueue(config.forward.queue.directory), findings_out=out
    )
    pipeline.submit(Signal.TRACES, encode_spans(spans), "grpc")
    pipeline.step()
    pipeline.drain()
    processor = sorted(_key(json.loads(line)) for line in out.getvalue().splitlines())
    assert agent, "the run raised no finding: nothing is compared"
    assert processor == agent
