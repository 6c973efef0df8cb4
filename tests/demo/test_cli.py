"""The demo command's options and exit status: --scenario, --quiet, failed verdicts, refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from otel_compaction.cli import demo as demo_cli
from otel_compaction.demo import SCENARIOS, DemoError, Expectation, Scenario, run_demo
from otel_compaction.demo.scenario import ScenarioContext
from otel_compaction.demo.verdict import verdict_lines
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.testing import capture_telemetry
from tests.demo import agent_conversations
from tests.demo.conftest import run_cli


@pytest.mark.slow
def test_scenario_option_runs_only_the_named_scenarios_quietly(tmp_path: Path) -> None:
    """--scenario twice runs those two only; --quiet leaves stderr empty."""
    run = run_cli(
        "--out", str(tmp_path), "--scenario", "note000-turn34", "--scenario", "note000-turn30", "-q"
    )
    assert run.status == 0
    assert run.stderr == ""
    assert "2 of 2 scenarios as expected" in run.stdout
    assert set(agent_conversations(tmp_path / "traces.jsonl")) == {
        "note000-turn30/debugger",
        "note000-turn34/debugger",
    }
    report = json.loads((tmp_path / "findings.json").read_text())
    assert len(report["conversations"]) == 2
    assert [(f["kind"], f["turn"]) for f in report["findings"]] == [("boundary_compaction", 30)]


def test_unknown_scenario_is_a_usage_error(tmp_path: Path) -> None:
    """A scenario name that does not exist is rejected by the parser (exit 2)."""
    with pytest.raises(SystemExit) as exited:
        run_cli("--out", str(tmp_path), "--scenario", "no-such-scenario")
    assert exited.value.code == 2
    assert not (tmp_path / "traces.jsonl").exists()


@pytest.mark.slow
def test_a_verdict_that_does_not_hold_exits_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario expected to be clean but flagged fails its verdict: FAIL line, exit 1."""
    flagged = next(s for s in SCENARIOS if s.name == "note000-turn30")
    wrong = dataclasses.replace(flagged, expected=(Expectation("debugger"),))
    monkeypatch.setattr(demo_cli, "SCENARIOS", (wrong,))
    run = run_cli("--out", str(tmp_path), "-q")
    assert run.status == 1
    (line,) = [x for x in run.stdout.splitlines() if "note000-turn30/debugger" in x]
    assert line.startswith("FAIL")
    assert "boundary_compaction@30" in line
    assert "0 of 1 scenarios as expected" in run.stdout


def test_the_demo_refuses_to_run_in_an_instrumented_process(tmp_path: Path) -> None:
    """With the instrumentation already on, the demo stops before writing anything."""
    instrumentor = CompactionInstrumentor()
    with capture_telemetry() as cap:
        instrumentor.instrument(
            tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider
        )
        try:
            with pytest.raises(DemoError, match="already on"):
                run_demo(tmp_path / "out")
            run = run_cli("--out", str(tmp_path / "out"))
        finally:
            instrumentor.uninstrument()
    assert run.status == 2
    assert "already on" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_scenario_that_breaks_fails_alone_and_the_others_still_run(tmp_path: Path) -> None:
    """An exception in one scenario's script fails that verdict; the next scenario still passes."""

    def broken(ctx: ScenarioContext) -> None:
        raise RuntimeError("the script broke")

    bad = Scenario("broken", "raises", "none", (Expectation("agent"),), broken)
    good = next(s for s in SCENARIOS if s.name == "note000-turn34")
    lines: list[str] = []
    result = run_demo(tmp_path, (bad, good), progress=lines.append)
    assert [v.ok for v in result.verdicts] == [False, True]
    assert result.verdicts[0].error == "RuntimeError: the script broke"
    assert "failed: RuntimeError: the script broke" in lines[0]
    assert any("the run failed" in line for line in verdict_lines(result.verdicts))
