"""Point 1 of a clean install: `opentelemetry-instrument python agent.py` exports our telemetry.

The environment holds the wheel and the anthropic SDK only (the distro comes with
the wheel); the agent is a plain script that never imports otel_compaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_compaction import semconv as sc
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply, ToolCall
from tests.clean_install.conftest import CleanEnv, json_documents, user_env
from tests.otlp_http import AGENT, AGENT_MODEL

pytestmark = pytest.mark.slow

README_COMMAND = (
    "opentelemetry-instrument --traces_exporter console --metrics_exporter console "
    "--logs_exporter none python agent.py"
)


def test_readme_names_the_command_and_the_exporter_variables() -> None:
    """The README shows this console command and names the variables a user sets."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in readme
    for name in (
        "OTEL_SERVICE_NAME",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_TRACES_EXPORTER",
        "OTEL_METRICS_EXPORTER",
    ):
        assert f"`{name}`" in readme, name


def test_unmodified_agent_under_opentelemetry_instrument_prints_our_spans_and_metrics(
    core_env: CleanEnv, tmp_path: Path
) -> None:
    """The README's console command: six chat spans, one compaction span and our metrics."""
    (tmp_path / "agent.py").write_text(AGENT)
    api = FakeLLMAPI(default=Reply("", tool_calls=(ToolCall("read_file", {"path": "a.py"}),)))
    argv = README_COMMAND.split()
    argv[argv.index("python")] = core_env.bin("python")
    with api.serve() as base_url:
        env = user_env(
            ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-clean", OTEL_SERVICE_NAME="agent"
        )
        done = core_env.run(*argv, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    documents = json_documents(done.stdout)
    spans = [d for d in documents if "context" in d and "name" in d]
    names = [s["name"] for s in spans]
    assert names.count(f"chat {AGENT_MODEL}") == 6
    assert names.count(sc.SPAN_COMPACTION) == 1
    assert "anthropic.messages.create" not in names  # the SDK's own span is suppressed
    chats = [s["attributes"] for s in spans if s["name"].startswith("chat")]
    assert sorted(a[sc.TURN_INDEX] for a in chats) == [1, 2, 3, 4, 5, 6]
    assert all(s["resource"]["attributes"]["service.name"] == "agent" for s in spans)
    metrics = {
        m["name"]
        for d in documents
        for rm in d.get("resource_metrics", ())
        for scope in rm["scope_metrics"]
        for m in scope["metrics"]
    }
    assert {sc.METRIC_TOKEN_USAGE.name, sc.METRIC_COMPACTIONS.name} <= metrics
    assert "sk-ant-clean" not in done.stdout
