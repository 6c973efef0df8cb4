"""The demo: scripted long-horizon agents on the real SDKs, observed by the instrumentation.

``otel-compaction demo`` (the README's first command) runs, in this process and
with no external service, six scripted agents that use the real ``anthropic``
and ``openai`` clients against a local LLM API (the project's fake of both
HTTP APIs, on 127.0.0.1). The embedded instrumentation watches them; their
traces are written as OTLP/JSON, analyzed back with ``otel-compaction analyze``,
and every scenario is judged against the findings it must produce::

    from otel_compaction.demo import run_demo
    result = run_demo(Path("otel-compaction-demo"))
    assert result.ok

See ``docs/demo.md``.
"""

from otel_compaction.demo.runner import DEFAULT_OUT, DemoError, DemoResult, run_demo
from otel_compaction.demo.scenario import Expectation, Scenario
from otel_compaction.demo.scenarios import SCENARIO_NAMES, SCENARIOS
from otel_compaction.demo.verdict import AgentVerdict, ScenarioVerdict

__all__ = [
    "DEFAULT_OUT",
    "SCENARIOS",
    "SCENARIO_NAMES",
    "AgentVerdict",
    "DemoError",
    "DemoResult",
    "Expectation",
    "Scenario",
    "ScenarioVerdict",
    "run_demo",
]
