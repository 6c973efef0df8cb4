"""The processor service reaches the agent's verdicts on the demo's spans, sent for real.

The demo runs in a child process (``demo_driver.py``): the real anthropic and openai
clients under the instrumentation, its spans exported by the SDK's OTLP/HTTP exporter
behind the demo's ``BatchSpanProcessor``, to the processor started as a service (its
CLI, the default reorder window). The findings compared are the processor's JSON lines,
one per finding (not the ``compaction_findings_total`` samples on /metrics), and the
findings the instrumentation raised in the demo's process, as (conversation, kind,
turn, rule).

A second run of a scenario reuses its conversation id (the demo's ids are fixed) on a
processor that still holds the first run (as ``scripts/stack`` does across runs, the
state kept on disk): its turns are at or below the conversation's mark, and its
compactions must not be applied at the current turn instead, where they made eleven
``thrashing`` livelocks with intervals of 0 turns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_compaction.demo.scenario import DEMO_WINDOWS
from tests.processor.downstream import free_port
from tests.processor.service_util import ROOT, http_ready, start_process, wait_for

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("demo_driver.py")
LIVELOCK = "note004-livelock"
Key = tuple[str, str, int, str]


def _key(finding: dict[str, Any]) -> Key:
    return (finding["conversation_id"], finding["kind"], finding["turn"], finding["rule"])


def _demo(tmp_path: Path, name: str, port: int, *scenarios: str) -> list[dict[str, Any]]:
    """The findings the demo's agents raised in process, their spans sent to ``port``."""
    raised = tmp_path / f"{name}.findings.jsonl"
    argv = [sys.executable, str(DRIVER), str(tmp_path / name), f"http://127.0.0.1:{port}",
            str(raised), *scenarios]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(ROOT), NO_PROXY="127.0.0.1")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in raised.read_text().splitlines()]


def _settled(admin: int) -> bool:
    """Nothing held in the processor's reorder window."""
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=5) as response:
        return bool(json.loads(response.read())["pending_items"] == 0)


def _logged(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def test_the_processor_service_reaches_the_demos_verdicts_and_a_rerun_adds_none_made_up(
    tmp_path: Path,
) -> None:
    """Every demo scenario over OTLP/HTTP: the processor's findings are the agent's, one for
    one; the livelock scenario run again under its id adds no finding the agent's rerun did
    not raise on that compaction."""
    http, admin = free_port(), free_port()
    config = tmp_path / "processor.yaml"
    config.write_text(yaml.safe_dump({
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{http}"},
        "metrics": {"endpoint": f"127.0.0.1:{admin}"},
        "output": {"mode": "tap", "log_findings": True},
        "detectors": {"model_windows": dict(DEMO_WINDOWS)},
    }))  # fmt: skip
    process = start_process(config, "processor")
    try:
        assert wait_for(lambda: http_ready(admin), 30)
        agent = _demo(tmp_path, "first", http)
        assert wait_for(lambda: _settled(admin) and len(_logged(config.with_name("processor.out")))
                        >= len(agent), 30)  # fmt: skip
        first = _logged(config.with_name("processor.out"))
        again = _demo(tmp_path, "again", http, LIVELOCK)
    finally:
        process.send_signal(signal.SIGTERM)  # applies what the window holds, then exits
        assert process.wait(60) == 0, config.with_name("processor.err").read_text()
    assert any(f["kind"] == "reexpansion_livelock" for f in agent)
    assert sorted(map(_key, first)) == sorted(map(_key, agent))
    rerun = _logged(config.with_name("processor.out"))[len(first) :]
    raised = {(f["compaction_id"], f["kind"], f["rule"]) for f in again}
    assert [f for f in rerun if (f["compaction_id"], f["kind"], f["rule"]) not in raised] == []
