"""Every value the code emits for an attribute with a value set is a member of its set.

The real paths are driven: the demo's scripted agents (the real anthropic and openai
clients under the instrumentation, against the scripted LLM server) write their spans
and metrics; the processor, in tap mode, reads those spans and emits its findings,
finding spans and metrics. Every attribute of ``semconv.VALUE_SETS`` on every span and
data point, and every label of the processor's Prometheus exposition, must be a member.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otel_compaction import semconv as sc
from otel_compaction.demo import run_demo
from otel_compaction.otlp.decode import Signal, encode_json, parse_json
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.telemetry import ProcessorMetrics
from tests.processor.conftest import make_config, queued

pytestmark = pytest.mark.slow

Seen = dict[str, set[str]]
"""The values seen of each attribute with a value set, by attribute key."""


@dataclass
class Emitted:
    """What the demo and the processor emitted, by where it was seen."""

    demo_spans: Seen = field(default_factory=dict)
    demo_metrics: Seen = field(default_factory=dict)
    processor_spans: Seen = field(default_factory=dict)
    processor_metrics: Seen = field(default_factory=dict)
    finding_kinds: set[str] = field(default_factory=set)


def _values(value: dict[str, Any]) -> Iterator[str]:
    """The strings of an OTLP/JSON ``AnyValue`` (a string, or an array of them)."""
    if "stringValue" in value:
        yield value["stringValue"]
    for item in value.get("arrayValue", {}).get("values", []):
        yield from _values(item)


def _note(seen: Seen, attributes: Iterable[dict[str, Any]]) -> None:
    """Note the values of the attributes with a value set; the trigger of an explicit
    compaction is the application's own word (``record_compaction(trigger=...)``), passed
    through as given, and not noted."""
    attributes = list(attributes)
    explicit = any(
        kv["key"] == sc.COMPACTION_SOURCE
        and kv.get("value", {}).get("stringValue") == sc.CompactionSource.EXPLICIT
        for kv in attributes
    )
    for kv in attributes:
        if kv["key"] in sc.VALUE_SETS and not (explicit and kv["key"] == sc.COMPACTION_TRIGGER):
            seen.setdefault(kv["key"], set()).update(_values(kv.get("value", {})))


def _walk(doc: Any, seen: Seen) -> None:
    """Note the attributes of every object in an OTLP/JSON document (spans, events, data
    points, resources alike)."""
    if isinstance(doc, dict):
        if isinstance(doc.get("attributes"), list):
            _note(seen, doc["attributes"])
        for value in doc.values():
            _walk(value, seen)
    elif isinstance(doc, list):
        for item in doc:
            _walk(item, seen)


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _labels(exposition: bytes, seen: Seen) -> None:
    """Note the label values of the attributes with a value set, every sample's."""
    labels = {sc.prometheus_label(key): key for key in sc.VALUE_SETS}
    for family in text_string_to_metric_families(exposition.decode()):
        for sample in family.samples:
            for label, value in sample.labels.items():
                if label in labels:
                    seen.setdefault(labels[label], set()).add(value)


def _run_processor(tmp_path: Path, traces: Path, emitted: Emitted) -> None:
    """The processor, tap mode, on the demo's spans: its metrics, findings and spans."""
    metrics = ProcessorMetrics("test", livelocked=lambda: 0, active=lambda: 0, queue_size=lambda: 0)
    config = make_config(tmp_path)
    assert config.forward.queue.directory is not None
    out = io.StringIO()
    pipeline = Pipeline(
        config,
        metrics=metrics,
        queue=PersistentQueue(config.forward.queue.directory),
        findings_out=out,
    )
    try:
        for line in _lines(traces):
            request = parse_json(Signal.TRACES, line.encode())
            pipeline.submit(Signal.TRACES, request, sc.ProcessorTransport.HTTP)
            pipeline.step()
        pipeline.drain()
        for request in queued(pipeline):
            _walk(encode_json(request), emitted.processor_spans)
        _labels(metrics.exposition(), emitted.processor_metrics)
    finally:
        metrics.shutdown()
    emitted.finding_kinds = {json.loads(line)["kind"] for line in out.getvalue().splitlines()}


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> Emitted:
    """Every demo scenario once, then the processor on its spans."""
    out_dir = tmp_path_factory.mktemp("demo")
    result = run_demo(out_dir)
    assert all(v.ok for v in result.verdicts)
    found = Emitted()
    for line in _lines(out_dir / "traces.jsonl"):
        _walk(json.loads(line), found.demo_spans)
    _walk(json.loads((out_dir / "metrics.json").read_text(encoding="utf-8")), found.demo_metrics)
    _run_processor(tmp_path_factory.mktemp("processor"), out_dir / "traces.jsonl", found)
    return found


def _outside(seen: Seen) -> dict[str, list[str]]:
    """The values seen that are not members of their attribute's set."""
    members = {key: {m.value for m in values} for key, values in sc.VALUE_SETS.items()}
    return {k: sorted(v - members[k]) for k, v in seen.items() if v - members[k]}


@pytest.mark.parametrize(
    "where", ["demo_spans", "demo_metrics", "processor_spans", "processor_metrics"]
)
def test_every_emitted_value_is_a_member_of_its_set(emitted: Emitted, where: str) -> None:
    """No span attribute, data point attribute or metric label of the demo or the processor
    takes a value outside its semconv value set."""
    assert not _outside(getattr(emitted, where))


def test_the_demo_and_the_processor_emit_the_sets_the_check_reads(emitted: Emitted) -> None:
    """The check is not vacuous: the demo writes sources, modes, triggers, id sources and
    phase sources; the processor labels signals, transports, reasons and finding kinds."""
    assert {
        sc.COMPACTION_SOURCE,
        sc.COMPACTION_MODE,
        sc.COMPACTION_TRIGGER,
        sc.CONVERSATION_ID_SOURCE,
        sc.PHASE_SOURCE,
        sc.GEN_AI_PROVIDER_NAME,
        sc.GEN_AI_OPERATION_NAME,
    } <= emitted.demo_spans.keys()
    assert {sc.FINDING_KIND, sc.ERROR_STAGE, sc.GEN_AI_TOKEN_TYPE} <= emitted.demo_metrics.keys()
    assert {
        sc.PROCESSOR_SIGNAL,
        sc.PROCESSOR_TRANSPORT,
        sc.PROCESSOR_REASON,
        sc.FINDING_KIND,
    } <= emitted.processor_metrics.keys()
    assert sc.FINDING_KIND in emitted.processor_spans
    assert emitted.finding_kinds


def test_the_findings_report_names_kinds_of_the_set(emitted: Emitted) -> None:
    """Each finding the processor logs has a ``kind`` of ``FindingKind``."""
    assert emitted.finding_kinds <= {str(k) for k in sc.FindingKind}


def test_every_error_stage_is_exported_at_zero(emitted: Emitted) -> None:
    """The errors counter carries every stage from start-up, ``advice`` included, and no
    other."""
    assert emitted.demo_metrics[sc.ERROR_STAGE] == {str(s) for s in sc.ErrorStage}
