"""The processor's component metadata: a Collector-style declaration that matches the code."""

from __future__ import annotations

from pathlib import Path

import yaml

from otel_compaction import semconv as sc

ROOT = Path(__file__).resolve().parents[2]
METADATA = ROOT / "otel_compaction" / "processor" / "metadata.yaml"


def test_metadata_declares_stability_and_statefulness() -> None:
    """metadata.yaml names the class, a stability per signal and the Statefulness warning."""
    meta = yaml.safe_load(METADATA.read_text())
    assert meta["status"]["class"] == "processor"
    signals = {s for level in meta["status"]["stability"].values() for s in level}
    assert signals == {"traces", "logs", "metrics"}
    assert "Statefulness" in meta["status"]["warnings"]


def test_routing_keys_are_the_ones_the_shipped_load_balancers_use() -> None:
    """The traces routing key is semconv's conversation id; the scaled configs route by it."""
    routing = yaml.safe_load(METADATA.read_text())["routing"]
    assert routing["traces"] == sc.CONVERSATION_ID
    for config in sorted((ROOT / "collector" / "scaled").glob("otelcol-lb-*.yaml")):
        text = config.read_text()
        assert f"routing_attributes: [{routing['traces']}]" in text, config
        assert f"routing_attributes: [{routing['logs']}]" in text, config
