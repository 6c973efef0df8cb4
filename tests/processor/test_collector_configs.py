"""The Collector configurations in ``collector/``: valid, consistent with the processor.

Every Collector configuration passes ``validate`` of the real Collector built
from ``collector/builder-config.yaml`` (and Jaeger's of the Jaeger build); the
other tests check what only we know: every pipeline names defined components,
the routing key is our semconv attribute, and the ports the Collector and the
processor use for each other agree.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_compaction import semconv as sc
from otel_compaction.processor.config import load_config
from tests.fleet import builds

COLLECTOR = Path(__file__).resolve().parents[2] / "collector"
OTELCOL = sorted(COLLECTOR.glob("*/otelcol*.yaml"))
PROCESSOR = sorted(COLLECTOR.glob("**/processor*.yaml"))
JAEGER_CONFIG = COLLECTOR / "jaeger" / "config.yaml"
# YAML files in collector/ that are no Collector configuration, and what checks them.
OTHER_YAML = {
    "compose.yaml": "tests/dashboards/test_stack.py",
    "builder-config.yaml": "scripts/build-otel (the build)",
}
# Variables a configuration reads with ${env:...} and no default, as the tests set them.
CONFIG_ENV: dict[str, dict[str, str]] = {}


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def _validate(binary: Path, path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **CONFIG_ENV.get(str(path.relative_to(COLLECTOR)), {})}
    argv = [str(binary), "validate", f"--config={path}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)


def test_every_yaml_file_in_collector_is_validated_by_one_test() -> None:
    """No configuration in ``collector/`` escapes validation: each YAML file is of a known kind."""
    checked = {*OTELCOL, *PROCESSOR, JAEGER_CONFIG, *(COLLECTOR / name for name in OTHER_YAML)}
    assert set(COLLECTOR.glob("**/*.yaml")) == checked


@pytest.mark.slow
@pytest.mark.parametrize("path", OTELCOL, ids=lambda p: str(p.relative_to(COLLECTOR)))
def test_the_real_collector_validates_every_collector_config(path: Path) -> None:
    """``otelcol validate`` of the Collector we build accepts each shipped configuration."""
    result = _validate(builds.collector(), path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_jaeger_validates_its_config() -> None:
    """``jaeger validate`` accepts collector/jaeger/config.yaml (in-memory storage, loopback)."""
    result = _validate(builds.jaeger(), JAEGER_CONFIG)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_real_collector_rejects_a_pipeline_with_an_undefined_exporter(tmp_path: Path) -> None:
    """The validation can fail: a pipeline naming an exporter nobody defined is refused."""
    config = _yaml(COLLECTOR / "tap" / "otelcol.yaml")
    config["service"]["pipelines"]["traces"]["exporters"].append("otlp/nowhere")
    broken = tmp_path / "otelcol.yaml"
    broken.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = subprocess.run(
        [str(builds.collector()), "validate", f"--config={broken}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "otlp/nowhere" in result.stdout + result.stderr


@pytest.mark.parametrize("path", PROCESSOR, ids=lambda p: str(p.relative_to(COLLECTOR)))
def test_every_processor_config_validates(path: Path) -> None:
    """Each shipped processor configuration passes the processor's own validation."""
    load_config(path)


@pytest.mark.parametrize("path", OTELCOL, ids=lambda p: str(p.relative_to(COLLECTOR)))
def test_pipelines_name_only_defined_components(path: Path) -> None:
    """Every receiver, processor and exporter a pipeline uses is defined in the file."""
    config = _yaml(path)
    pipelines = config["service"]["pipelines"]
    assert pipelines
    for name, pipeline in pipelines.items():
        assert name.split("/")[0] in ("traces", "metrics", "logs"), name
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in (config.get(kind) or {}), f"{path.name}: {name}: {component}"


@pytest.mark.parametrize("name", ["otelcol-lb-static.yaml", "otelcol-lb-dns.yaml"])
def test_scaled_out_routes_by_conversation_never_by_trace(name: str) -> None:
    """The load-balancing exporter shards traces by ``compaction.conversation.id``."""
    config = _yaml(COLLECTOR / "scaled" / name)
    exporter = config["exporters"]["load_balancing/conversations"]
    assert exporter["routing_key"] == "attributes"
    assert exporter["routing_attributes"] == [sc.CONVERSATION_ID]
    resolver = "static" if "static" in name else "dns"
    assert set(exporter["resolver"]) == {resolver}
    logs = config["exporters"]["load_balancing/sessions"]
    assert logs["routing_attributes"] == [sc.SESSION_ID]
    traces = config["service"]["pipelines"]["traces/compaction"]["exporters"]
    assert "load_balancing/conversations" in traces


def test_replicas_listen_where_the_load_balancer_sends() -> None:
    """The static resolver's port is the replicas' OTLP/gRPC port."""
    lb = _yaml(COLLECTOR / "scaled" / "otelcol-lb-static.yaml")
    hosts = lb["exporters"]["load_balancing/conversations"]["resolver"]["static"]["hostnames"]
    replica = load_config(COLLECTOR / "scaled" / "processor.yaml")
    assert replica.receivers.otlp_grpc is not None
    assert {_port(h) for h in hosts} == {_port(replica.receivers.otlp_grpc)}


@pytest.mark.parametrize(
    ("deployment", "to_processor", "from_processor"),
    [
        ("tap", "otlp/compaction", "otlp/findings"),
        ("single-node", "otlp/compaction", "otlp/enriched"),
    ],
)
def test_collector_and_processor_ports_agree(
    deployment: str, to_processor: str, from_processor: str
) -> None:
    """The Collector exports to the processor's receiver and receives on its forward port."""
    collector = _yaml(COLLECTOR / deployment / "otelcol.yaml")
    processor = load_config(COLLECTOR / deployment / "processor.yaml")
    assert processor.receivers.otlp_grpc is not None
    assert processor.forward.endpoint is not None
    sent_to = collector["exporters"][to_processor]["endpoint"]
    assert _port(sent_to) == _port(processor.receivers.otlp_grpc)
    back_on = collector["receivers"][from_processor]["protocols"]["grpc"]["endpoint"]
    assert _port(back_on) == _port(processor.forward.endpoint)


def test_the_container_file_runs_the_processor_with_the_example_config() -> None:
    """The Containerfile installs the processor extra and starts the processor subcommand."""
    text = (COLLECTOR / "Containerfile").read_text(encoding="utf-8")
    assert '".[processor]"' in text
    assert "processor.example.yaml" in text
    assert '"otel-compaction", "processor"' in text
    assert "/readyz" in text


TAP_CONFIGS = ["tap/otelcol.yaml", "scaled/otelcol-lb-static.yaml", "scaled/otelcol-lb-dns.yaml"]


@pytest.mark.parametrize("name", TAP_CONFIGS)
def test_tap_sends_the_processor_only_its_inputs_and_jaeger_everything(name: str) -> None:
    """In tap mode the processor's pipeline filters on the names extract.py reads (its input
    keys, our turn numbering, the inference operations), the same conditions in every file,
    and Jaeger's pipeline drops nothing (tests/fleet checks the filter span for span)."""
    import re

    from otel_compaction.otlp.extract import ENGINE_INPUT_KEYS

    config = _yaml(COLLECTOR / name)
    conditions = config["processors"]["filter/compaction-inputs"]["traces"]["span"]
    reference = _yaml(COLLECTOR / TAP_CONFIGS[0])["processors"]["filter/compaction-inputs"]
    assert conditions == reference["traces"]["span"]
    text = " ".join(conditions)
    keys = set(re.findall(r'attributes\["([^"]+)"\]', text))
    assert keys == {*ENGINE_INPUT_KEYS, sc.CONVERSATION_ID, sc.TURN_INDEX, sc.GEN_AI_OPERATION_NAME}
    operations = re.findall(r'attributes\["gen_ai.operation.name"\] != "([^"]+)"', text)
    assert set(operations) == set(sc.INFERENCE_OPERATIONS)
    assert all(c.startswith(f'name != "{sc.SPAN_COMPACTION}" and ') for c in conditions)
    for kind, pipeline in config["service"]["pipelines"].items():
        if not kind.startswith("traces"):
            continue  # logs (Claude Code's events) all go to the processor
        exporters, processors = pipeline["exporters"], pipeline.get("processors", [])
        if "otlp/jaeger" in exporters:
            assert not any(p.startswith("filter") for p in processors), name
        if any(e in exporters for e in ("otlp/compaction", "load_balancing/conversations")):
            assert "filter/compaction-inputs" in processors, name
