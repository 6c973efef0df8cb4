"""LiteLLM for real (its newest release, own environment), both provider paths, against a
scripted server on loopback: every call one inference span, every condensation one
compaction in the agent's conversation, the condenser's calls no turns.

The agent (``drivers/litellm_agent.py``) condenses its history with the call shape of
OpenHands' summarizing condenser, the model layer OpenHands runs on.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.frameworks._driven import drive_module
from tests.frameworks.venvs import ROOT, framework_python, run_env

pytestmark = pytest.mark.slow

VARIANTS = [
    {"provider": "anthropic", "mode": "sync", "stream": False},
    {"provider": "anthropic", "mode": "async", "stream": True},
    {"provider": "openai", "mode": "sync", "stream": True},
    {"provider": "openai", "mode": "async", "stream": False},
]
STEPS = 50


def _id(variant: dict[str, Any]) -> str:
    wire = "sse" if variant["stream"] else "json"
    return f"{variant['provider']}-{variant['mode']}-{wire}"


def _run(options: str) -> dict[str, Any]:
    return drive_module("litellm", "tests.frameworks.drivers.litellm_agent", options)


def run(**options: Any) -> dict[str, Any]:
    """The driver's report for these options (each set of options runs once)."""
    return _run(json.dumps({"steps": STEPS, **options}, sort_keys=True))


def chats(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in report["spans"] if s["name"].startswith("chat")]


def compactions(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in report["spans"] if s["name"] == "compaction"]


def flags(span: dict[str, Any]) -> set[str]:
    prefix = "compaction.flag."
    return {
        k[len(prefix) :]
        for k, v in span["attributes"].items()
        if k.startswith(prefix) and v is True
    }


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_every_call_is_one_inference_span(variant: dict[str, Any]) -> None:
    """Each request LiteLLM sent, agent's or condenser's, is exactly one inference span."""
    report = run(**variant)
    assert report["errors"] == 0
    assert report["condensations"] == 2
    assert len(chats(report)) == report["requests"] == STEPS + report["condensations"]
    provider = variant["provider"]
    assert {s["attributes"]["gen_ai.provider.name"] for s in chats(report)} == {provider}
    assert all(s["attributes"].get("gen_ai.usage.input_tokens", 0) > 0 for s in chats(report))


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_condenser_calls_are_no_turns(variant: dict[str, Any]) -> None:
    """The condenser's calls sit in the agent's conversation without a turn; the turns
    count the agent's calls only, one conversation in all."""
    report = run(**variant)
    spans = chats(report)
    summarizers = [s for s in spans if "compaction.turn.index" not in s["attributes"]]
    turns = [s["attributes"]["compaction.turn.index"] for s in spans if s not in summarizers]
    assert len(summarizers) == report["condensations"]
    assert turns == list(range(1, STEPS + 1))
    assert len({s["attributes"]["compaction.conversation.id"] for s in spans}) == 1


@pytest.mark.parametrize("variant", VARIANTS, ids=_id)
def test_each_condensation_is_one_compaction_at_the_next_call(variant: dict[str, Any]) -> None:
    """Every condensation is one lossy compaction, a child of the agent's next call, at its
    turn, with the condenser's call as its cost and no finding."""
    report = run(**variant)
    spans = {s["span_id"]: s for s in report["spans"]}
    found = compactions(report)
    assert len(found) == report["condensations"]
    for compaction in found:
        attributes = compaction["attributes"]
        parent = spans[compaction["parent_id"]]["attributes"]
        assert attributes["compaction.turn.index"] == parent["compaction.turn.index"]
        assert attributes["compaction.conversation.id"] == parent["compaction.conversation.id"]
        assert attributes["compaction.mode"] == "lossy"
        assert attributes["compaction.summarizer.calls"] == 1
        assert attributes["compaction.tokens.after"] < attributes["compaction.tokens.before"]
        assert flags(compaction) == set()


def test_the_host_gets_the_same_results_with_and_without_the_instrumentation() -> None:
    """What LiteLLM returns to the agent is the same, call by call, instrumented or not."""
    plain = run(provider="anthropic", mode="sync", stream=False, instrument=False)
    assert plain["spans"] == []
    assert run(provider="anthropic", mode="sync", stream=False)["results"] == plain["results"]
    plain = run(provider="openai", mode="async", stream=False, instrument=False)
    assert run(provider="openai", mode="async", stream=False)["results"] == plain["results"]


def test_our_failures_never_reach_the_host() -> None:
    """With every reading of ours raising, the agent gets the very same results, the
    errors are counted, and no span is left half made."""
    broken = run(provider="openai", mode="sync", stream=True, fault=True)
    plain = run(provider="openai", mode="sync", stream=True, instrument=False)
    assert broken["results"] == plain["results"]
    assert broken["errors"] > 0
    assert chats(broken) == []


def test_responses_calls_are_seen() -> None:
    """``litellm.responses`` calls are inference spans of one conversation, with usage."""
    report = run(api="responses", provider="openai", steps=4)
    spans = chats(report)
    assert len(spans) == report["requests"] == 4
    assert [s["attributes"]["compaction.turn.index"] for s in spans] == [1, 2, 3, 4]
    assert all(s["attributes"]["gen_ai.usage.input_tokens"] > 0 for s in spans)


def test_uninstrument_removes_the_callback() -> None:
    """The callback is in LiteLLM's lists while instrumented and gone after."""
    report = run(provider="anthropic", mode="sync", stream=False)
    assert report["callbacks_while_on"] == 1
    assert report["callbacks_after"] == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_litellm_own_otel_logger_enriches_our_span(mode: str) -> None:
    """With ``callbacks=["otel"]`` too, each call is still one inference span: LiteLLM's
    logger writes its attributes onto ours and opens no ``litellm_request`` span."""
    report = run(provider="openai", mode=mode, stream=mode == "async", otel_callback=True, steps=6)
    names = [s["name"] for s in report["spans"]]
    assert "litellm_request" not in names
    spans = chats(report)
    assert len(spans) == report["requests"] == 6
    assert all("gen_ai.cost.total_cost" in s["attributes"] for s in spans)
    assert [s["attributes"]["compaction.turn.index"] for s in spans] == [1, 2, 3, 4, 5, 6]


AUTO_AGENT = """
import litellm
from otel_compaction.testing.llm_api import FakeLLMAPI, Reply
with FakeLLMAPI(default=Reply("hi")).serve() as base:
    for n in (1, 2):
        messages = [{"role": "user", "content": "go " * n}]
        litellm.completion(
            model="anthropic/claude-sonnet-4-5", messages=messages, api_base=base, api_key="k"
        )
        litellm.completion(
            model="openai/gpt-4o", messages=messages, api_base=base + "/v1", api_key="k"
        )
"""


def test_opentelemetry_instrument_sees_litellm_calls(tmp_path: Any) -> None:
    """Under ``opentelemetry-instrument`` (our entry point, as an installed wheel declares
    it), an unmodified LiteLLM script's calls are inference spans, one each."""
    info = tmp_path / "otel_compaction-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-compaction\nVersion: 0.1.0\n")
    entry = "compaction = otel_compaction.instrument:CompactionInstrumentor"
    (info / "entry_points.txt").write_text(f"[opentelemetry_instrumentor]\n{entry}\n")
    python = framework_python("litellm")
    env = run_env(
        {
            "PYTHONPATH": f"{tmp_path}:{ROOT}",
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
        }
    )
    done = subprocess.run(
        [
            str(python),
            str(python.parent / "opentelemetry-instrument"),
            str(python),
            "-c",
            AUTO_AGENT,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.count('"name": "chat claude-sonnet-4-5"') == 2
    assert done.stdout.count('"name": "chat gpt-4o"') == 2
