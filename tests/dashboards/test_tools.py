"""The scripts in dashboards/tools: the Grafana alert generator's guard and the replayer."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.dashboards.catalog import ROOT, load_tool

LIVELOCK = ROOT / "tests" / "processor" / "testdata" / "livelock_004.traces.jsonl"


def test_generator_refuses_an_expression_that_could_fire_with_a_zero_value() -> None:
    """Grafana fires on B > 0, so the generator rejects an expression like `x < 1`."""
    generator = load_tool("grafana_alerts")
    rule: dict[str, Any] = {"alert": "Bad", "expr": "compaction_conversations_active < 1"}
    with pytest.raises(ValueError, match="must end in"):
        generator.grafana_rule(rule)
    rule["expr"] = "sum(x) > 0.5\nand\nsum(y) < 3"
    assert generator.grafana_rule(rule)["title"] == "Bad"


def _times(requests: list[dict[str, Any]]) -> list[int]:
    return [
        int(span[key])
        for request in requests
        for rs in request["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for key in ("startTimeUnixNano", "endTimeUnixNano")
    ]


def test_replay_moves_the_recording_to_now_keeping_its_timing() -> None:
    """After shift_to(end), the last timestamp is `end` and all gaps are unchanged."""
    replay = load_tool("replay")
    original = replay.load(LIVELOCK)
    shifted = copy.deepcopy(original)
    end = 1_900_000_000_000_000_000
    replay.shift_to(shifted, end)
    before, after = _times(original), _times(shifted)
    assert max(after) == end
    assert [b - a for a, b in zip(before, after, strict=True)] == [end - max(before)] * len(before)


def test_replay_refuses_a_non_http_endpoint() -> None:
    """Only http(s) endpoints are accepted: no file: or custom schemes."""
    with pytest.raises(ValueError, match="http"):
        load_tool("replay").post("file:///etc/passwd", {})
