"""A long-lived agent for the end-to-end tests: ``python -m tests.dashboards.long_agent OUT URL S``.

The demo's healthy and phase-boundary scenarios (the real anthropic and openai
clients on the local LLM API, instrumented in process) with their metrics exported
every second, and a pause of ``S`` seconds before the first and after the last: its
series exist, at zero, before its first compaction, and are exported again after.
Exits 0 when every scenario found what it expects.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

from otel_compaction.demo import SCENARIOS, run_demo, telemetry
from otel_compaction.demo.scenario import Scenario, ScenarioContext

NAMES = ("healthy", "note000-turn30")


def paused(scenario: Scenario, before: float, after: float) -> Scenario:
    """``scenario`` that sleeps ``before`` and ``after`` its run."""

    def run(ctx: ScenarioContext, inner: Callable[[ScenarioContext], None] = scenario.run) -> None:
        time.sleep(before)
        inner(ctx)
        time.sleep(after)

    return dataclasses.replace(scenario, run=run)


def main(argv: list[str]) -> int:
    """Run the scenarios against the OTLP endpoint ``argv[1]``, files in ``argv[0]``."""
    out, endpoint, pause = Path(argv[0]), argv[1], float(argv[2])
    telemetry.METRIC_INTERVAL_MS = 1000  # a long-lived agent exports while it runs
    first, last = (s for s in SCENARIOS if s.name in NAMES)
    scenarios = [paused(first, pause, 0.0), paused(last, 0.0, pause)]
    result = run_demo(out, scenarios, otlp_endpoint=endpoint)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
