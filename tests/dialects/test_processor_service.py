"""The processor service itself, fed by another instrumentation's real OTLP/HTTP exporter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dialects.runs import WINDOW, run_agent
from tests.processor.service_util import running


@pytest.mark.parametrize("variant", ["healthy", "stuck"])
def test_the_service_judges_an_agent_exported_over_otlp(variant: str, tmp_path: Path) -> None:
    """OpenLLMetry spans sent in batches to a running processor: stuck flagged, healthy not."""
    windows = {"model_windows": {"agent-model": WINDOW}}
    with running(tmp_path, detectors=windows) as (service, out):
        assert service.http is not None
        endpoint = f"http://127.0.0.1:{service.http.port}/v1/traces"
        run_agent(
            "openllmetry_openai",
            "openllmetry",
            tmp_path,
            variant=variant,
            steps=34 if variant == "healthy" else 12,
            extra={"otlp_endpoint": endpoint},
        )
    findings = [json.loads(line) for line in out.getvalue().splitlines()]
    if variant == "healthy":
        assert findings == []
        return
    kinds = {f["kind"] for f in findings}
    assert {"ineffective_compaction", "reexpansion_livelock"} <= kinds
    assert all("inferred from GenAI telemetry" in f["reason"] for f in findings)
