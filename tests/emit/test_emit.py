"""The emit layer: analyses become the documented attributes and metrics."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_compaction import semconv as sc
from otel_compaction.emit import (
    CompactionMetrics,
    compaction_attributes,
    finding_attributes,
    truncate_content,
    turn_attributes,
)
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionRecord,
    Cycle,
    Finding,
    PhaseEstimate,
    Pressure,
    TurnAnalysis,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind, PhaseSource

PHASE = PhaseEstimate("patch", 0.63, 0.61, 0.4212345, PhaseSource.INFERRED, (0.1, 0.2, 0.63, 0.07))
PRESSURE = Pressure(142_000, 200_000, 0.71, 0.05)


def _record(**kw: object) -> CompactionRecord:
    base: dict[str, object] = {
        "compaction_id": "c2",
        "conversation_id": "conv",
        "turn_index": 30,
        "source": CompactionSource.INFERRED,
        "mode": CompactionMode.LOSSY,
        "trigger": "auto",
        "tokens_before": 142_000,
        "tokens_after": 30_000,
        "summary_tokens": 2_000,
        "retained_tail_tokens": 10_000,
        "duplicated_tokens": 0,
        "carried_over_tokens": None,
        "parent_id": "c1",
        "root_id": "c1",
        "generation": 1,
        "cycle": Cycle(9, 54_000, 110_000, 56_000),
        "token_fraction": 0.71,
    }
    base.update(kw)
    return CompactionRecord(**base)  # type: ignore[arg-type]


def test_turn_attributes_carry_pressure_phase_and_raw_inputs() -> None:
    """An inference span gets pressure, phase and the inputs the processor needs."""
    analysis = TurnAnalysis("conv", 31, PRESSURE, PHASE, compacted=True)
    obs = TurnObservation(context_tokens=142_000, new_content_tokens=600, tool_calls=("edit",))
    attrs = turn_attributes(analysis, obs)
    assert attrs[sc.CONVERSATION_ID] == "conv"
    assert attrs[sc.TURN_INDEX] == 31
    assert attrs[sc.PRESSURE_TOKEN_FRACTION] == 0.71
    assert attrs[sc.PHASE_TRANSITION_LIKELIHOOD] == 0.4212
    assert attrs[sc.PHASE_SOURCE] == "inferred"
    assert attrs[sc.GEN_AI_CONVERSATION_COMPACTED] is True
    assert attrs[sc.CONTEXT_NEW_CONTENT_TOKENS] == 600
    assert attrs[sc.TOOL_CALLS] == ["edit"]


def test_compacted_is_never_set_false() -> None:
    """gen_ai.conversation.compacted is absent, not false, on ordinary turns."""
    attrs = turn_attributes(TurnAnalysis("conv", 2, PRESSURE, PHASE))
    assert sc.GEN_AI_CONVERSATION_COMPACTED not in attrs


def test_compaction_attributes_hold_lineage_cycle_and_flags() -> None:
    """A flagged compaction span has its lineage, cycle, flag and reason."""
    finding = Finding(FindingKind.BOUNDARY_COMPACTION, "conv", "c2", 30, "vetoed.", "veto")
    attrs = compaction_attributes(CompactionAnalysis(_record(), PRESSURE, PHASE, (finding,)))
    assert attrs[sc.LINEAGE_PARENT_ID] == "c1"
    assert attrs[sc.LINEAGE_GENERATION] == 1
    assert attrs[sc.CYCLE_RESIDUAL_TOKENS] == 56_000
    assert attrs[sc.FLAG_BOUNDARY] is True
    assert sc.FLAG_LIVELOCK not in attrs
    assert attrs[sc.FLAG_REASON] == "vetoed."
    assert sc.TOKENS_CARRIED_OVER not in attrs  # unknown stays absent, not 0


def test_finding_attributes_name_kind_and_rule() -> None:
    """A finding span says what was found, by which rule, on which compaction."""
    finding = Finding(FindingKind.REEXPANSION_LIVELOCK, "conv", "c9", 33, "faster.", "cadence")
    attrs = finding_attributes(finding)
    assert attrs[sc.FINDING_KIND] == "reexpansion_livelock"
    assert attrs[sc.FINDING_RULE] == "cadence"
    assert attrs[sc.FLAG_LIVELOCK] is True
    assert attrs[sc.COMPACTION_ID] == "c9"


def test_truncate_content_marks_what_was_cut() -> None:
    """Text over the cap is cut and says how much was left out."""
    assert truncate_content("short", 10) == ("short", False)
    text, cut = truncate_content("x" * 25, 10)
    assert cut
    assert text.startswith("x" * 10)
    assert "15" in text


def _points(reader: InMemoryMetricReader, name: str) -> list[object]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for p in m.data.data_points
    ]


def test_counters_start_at_zero_for_known_label_sets() -> None:
    """Every source/mode and finding kind is exported at 0 before any event."""
    reader = InMemoryMetricReader()
    CompactionMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    compactions = _points(reader, sc.METRIC_COMPACTIONS.name)
    findings = _points(reader, sc.METRIC_FINDINGS.name)
    assert len(compactions) == len(CompactionSource) * len(CompactionMode)
    assert len(findings) == len(FindingKind)
    assert all(p.value == 0 for p in compactions + findings)  # type: ignore[attr-defined]


def test_record_compaction_counts_and_observes() -> None:
    """A compaction with a finding increments both counters and fills the histograms."""
    reader = InMemoryMetricReader()
    metrics = CompactionMetrics(
        MeterProvider(metric_readers=[reader]).get_meter("t"), livelocked=lambda: 2
    )
    finding = Finding(FindingKind.REEXPANSION_LIVELOCK, "conv", "c2", 30, "r", "cadence")
    metrics.record_compaction(CompactionAnalysis(_record(), PRESSURE, PHASE, (finding,)))
    total = sum(p.value for p in _points(reader, sc.METRIC_COMPACTIONS.name))  # type: ignore[attr-defined]
    assert total == 1
    by_kind = {
        p.attributes[sc.FINDING_KIND]: p.value  # type: ignore[attr-defined]
        for p in _points(reader, sc.METRIC_FINDINGS.name)
    }
    assert by_kind["reexpansion_livelock"] == 1
    assert by_kind["boundary_compaction"] == 0
    (interval,) = _points(reader, sc.METRIC_INTERVAL.name)
    assert interval.sum == 9  # type: ignore[attr-defined]
    assert list(interval.explicit_bounds) == list(sc.INTERVAL_BUCKETS)  # type: ignore[attr-defined]
    (gauge,) = _points(reader, sc.METRIC_LIVELOCKED.name)
    assert gauge.value == 2  # type: ignore[attr-defined]
    for attrs in (p.attributes for p in _points(reader, sc.METRIC_RESIDUAL.name)):  # type: ignore[attr-defined]
        assert sc.CONVERSATION_ID not in attrs  # ids never become metric labels


def test_negative_residual_is_recorded_as_zero() -> None:
    """A cycle that grew less than its new content records residual 0, not a dropped value."""
    reader = InMemoryMetricReader()
    metrics = CompactionMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    record = _record(cycle=Cycle(9, 54_000, 50_000, -4_000))
    metrics.record_compaction(CompactionAnalysis(record, PRESSURE, PHASE))
    (point,) = _points(reader, sc.METRIC_RESIDUAL.name)
    assert (point.count, point.sum) == (1, 0)  # type: ignore[attr-defined]
