"""Point 2 of a clean install: the README's in-code example works as written, and
instrumenting with no SDK configured warns once, saying what to add."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from otel_compaction import semconv as sc
from otel_compaction.testing.llm_api import FakeLLMAPI
from tests.clean_install.conftest import CleanEnv, user_env
from tests.otlp_http import OtlpHttpReceiver, attributes

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(heading: str) -> str:
    """The first Python block under a README heading."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(f"## {heading}\n") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def test_readme_in_code_example_exports_the_call_over_otlp(
    core_env: CleanEnv, otlp_receiver: OtlpHttpReceiver, tmp_path: Path
) -> None:
    """Run as it is, the example's call reaches an OTLP endpoint with its conversation and phase."""
    (tmp_path / "example.py").write_text(readme_block("Or in code"))
    with FakeLLMAPI().serve() as base_url:
        env = user_env(
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="sk-ant-clean",
            OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.endpoint,
            OTEL_SERVICE_NAME="example",
        )
        done = core_env.run("python", "example.py", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no OpenTelemetry SDK" not in done.stderr
    (chat,) = [s for s in otlp_receiver.spans() if s.name.startswith("chat ")]
    found = attributes(chat)
    assert found[sc.GEN_AI_CONVERSATION_ID] == "ticket-4711"
    assert found[sc.PHASE_NAME] == "hypothesize"
    assert found[sc.PHASE_SOURCE] == "reported"
    assert "/v1/metrics" in {path for path, _ in otlp_receiver.bodies}


NO_SDK = textwrap.dedent(
    """
    import anthropic
    from otel_compaction import CompactionInstrumentor

    instrumentor = CompactionInstrumentor()
    instrumentor.instrument()
    instrumentor.uninstrument()
    instrumentor.instrument()
    anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-6", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    print("call returned")
    """
)


def test_instrument_without_an_sdk_warns_once_saying_what_to_add(
    core_env: CleanEnv, tmp_path: Path
) -> None:
    """No providers anywhere: one warning on stderr naming the three ways out; the call works."""
    (tmp_path / "agent.py").write_text(NO_SDK)
    with FakeLLMAPI().serve() as base_url:
        env = user_env(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-clean")
        done = core_env.run("python", "agent.py", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "call returned\n"
    assert done.stderr.count("no OpenTelemetry SDK") == 1
    for remedy in ("opentelemetry-instrument", "README's in-code example", "tracer_provider="):
        assert remedy in done.stderr
