"""Running the demo: server, telemetry, instrumentation, scenarios, analysis, verdicts, files.

::

    result = run_demo(Path("otel-compaction-demo"))
    result.ok               # every scenario produced exactly its expected findings

The findings are judged twice: as the live instrumentation raised them, and as
``otel-compaction analyze`` reads them back from ``traces.jsonl`` (the same
code path as the command), so the demo shows that both agree.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.demo.scenario import DEMO_WINDOWS, Scenario, ScenarioContext
from otel_compaction.demo.scenarios import SCENARIOS
from otel_compaction.demo.server import DemoLLMServer
from otel_compaction.demo.telemetry import DemoTelemetry, counter_values
from otel_compaction.demo.verdict import ScenarioVerdict, judge
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.model import Finding
from otel_compaction.report.build import analyze_files
from otel_compaction.report.model import FindingsReport

FINDINGS_FILE = "findings.json"
REPORT_FILE = "report.html"
DEFAULT_OUT = Path("otel-compaction-demo")

Progress = Callable[[str], None]


class DemoError(RuntimeError):
    """The demo cannot run (for instance: this process is already instrumented)."""


@dataclass(frozen=True, slots=True)
class _Run:
    scenario: Scenario
    conversations: Mapping[str, tuple[str, ...]]
    seconds: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the demo did and found.

    Args:
        verdicts: one per scenario, in run order.
        report: ``analyze``'s report of ``traces.jsonl``.
        files: the files written.
        findings_counter: the findings counter (``compaction.findings``) by kind.
        requests: requests the local LLM API answered.
    """

    verdicts: tuple[ScenarioVerdict, ...]
    report: FindingsReport
    files: tuple[Path, ...]
    findings_counter: Mapping[str, float]
    requests: int

    @property
    def ok(self) -> bool:
        """Every scenario's verdict matched its expectation."""
        return all(v.ok for v in self.verdicts)


def demo_settings() -> Settings:
    """Default thresholds and the demo models' small window; the environment is not read.

    The expected verdicts assume the default thresholds.
    """
    return Settings.from_env({}, model_windows=dict(DEMO_WINDOWS))


def require_sdks() -> None:
    """Raise :class:`DemoError` naming what to install when an LLM SDK is missing."""
    missing = [name for name in ("anthropic", "openai") if importlib.util.find_spec(name) is None]
    if missing:
        raise DemoError(
            f"the demo drives the real anthropic and openai clients; {' and '.join(missing)} "
            "not installed: pip install 'otel-compaction[demo]'"
        )


def run_demo(
    out_dir: Path = DEFAULT_OUT,
    scenarios: Sequence[Scenario] = SCENARIOS,
    *,
    otlp_endpoint: str | None = None,
    progress: Progress | None = None,
) -> DemoResult:
    """Run ``scenarios``, write the files to ``out_dir``, and judge every scenario.

    Raises:
        DemoError: an SDK is missing, the OTLP endpoint is not a URL, or the
            instrumentation is already on in this process.
        OSError: ``out_dir`` cannot be written.
    """
    require_sdks()
    instrumentor = CompactionInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        raise DemoError("the compaction instrumentation is already on in this process")
    settings = demo_settings()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        telemetry = DemoTelemetry(out_dir, otlp_endpoint)
    except ValueError as exc:
        raise DemoError(str(exc)) from None
    live: list[Finding] = []
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        settings=settings,
        on_finding=live.append,
    )
    server = DemoLLMServer()
    try:
        runs = _run_all(scenarios, server, telemetry, instrumentor, progress)
        metrics = telemetry.flush()
    finally:
        instrumentor.uninstrument()
        telemetry.shutdown()
    report = analyze_files([telemetry.traces_path], settings)
    written = _write_reports(out_dir, _labelled(report, runs), settings)
    files = (telemetry.traces_path, telemetry.metrics_path, *written)
    verdicts = tuple(
        judge(run.scenario, run.conversations, report, live, run.seconds, run.error) for run in runs
    )
    counter = counter_values(metrics, sc.METRIC_FINDINGS.name, sc.FINDING_KIND)
    return DemoResult(verdicts, report, files, counter, server.request_count)


def _run_all(
    scenarios: Sequence[Scenario],
    server: DemoLLMServer,
    telemetry: DemoTelemetry,
    instrumentor: CompactionInstrumentor,
    progress: Progress | None,
) -> list[_Run]:
    """Run the scenarios one after the other on the local LLM API."""
    runs: list[_Run] = []
    with server.serve():
        for number, scenario in enumerate(scenarios, 1):
            runs.append(_run_scenario(scenario, server, telemetry))
            server.forget_requests()
            if progress is not None:
                progress(_progress_line(runs[-1], instrumentor, number, len(scenarios)))
    return runs


def _run_scenario(scenario: Scenario, server: DemoLLMServer, telemetry: DemoTelemetry) -> _Run:
    """Run one scenario; an exception fails its verdict instead of stopping the demo."""
    started = time.monotonic()
    ctx = ScenarioContext(scenario.name, server, telemetry.tracer)
    error = None
    try:
        scenario.run(ctx)
    except Exception as exc:  # noqa: BLE001 - one broken run must not hide the other verdicts
        error = f"{type(exc).__name__}: {exc}"
    finally:
        ctx.close()
    conversations = {
        agent: telemetry.ledger.conversations(span.get_span_context().trace_id)
        for agent, span in ctx.spans.items()
    }
    return _Run(scenario, conversations, time.monotonic() - started, error)


def _progress_line(run: _Run, instrumentor: CompactionInstrumentor, number: int, total: int) -> str:
    """``[2/6] note000-turn30   40 turns, 1 compaction (0.3 s)``."""
    turns = compactions = 0
    runtime = instrumentor.runtime
    for ids in run.conversations.values():
        for cid in ids:
            analyzer = runtime.registry.peek(cid) if runtime is not None else None
            if analyzer is not None:
                turns += analyzer.turn_index
                compactions += len(analyzer.compactions)
    agents = len(run.conversations)
    stats = f"{_n(agents, 'agent')}, " if agents > 1 else ""
    stats += f"{_n(turns, 'turn')}, {_n(compactions, 'compaction')}"
    if run.error is not None:
        stats += f", failed: {run.error}"
    return f"[{number}/{total}] {run.scenario.name:<22} {stats} ({run.seconds:.1f} s)"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _labelled(report: FindingsReport, runs: Sequence[_Run]) -> FindingsReport:
    """The report with each conversation labelled by the demo agent that made it."""
    label = {cid: agent for run in runs for agent, ids in run.conversations.items() for cid in ids}
    conversations = tuple(
        dataclasses.replace(c, agent=label.get(c.conversation_id, c.agent))
        for c in report.conversations
    )
    return dataclasses.replace(report, conversations=conversations)


def _write_reports(out_dir: Path, report: FindingsReport, settings: Settings) -> list[Path]:
    """``findings.json`` (exactly ``analyze --format json``) and ``report.html``."""
    findings = out_dir / FINDINGS_FILE
    findings.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    written = [findings]
    try:
        from otel_compaction.report.html import render_html  # plotly: the report extra
    except ImportError:
        return written
    html = out_dir / REPORT_FILE
    html.write_text(render_html(report, settings=settings), encoding="utf-8")
    written.append(html)
    return written
