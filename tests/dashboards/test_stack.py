"""The compose stack: every file it mounts exists and the services find each other.

Docker is not available in CI, so the stack is checked statically: the compose
file's mounts and build files exist, the configs it mounts are the tested ones,
and every address one component uses for another is a compose service and port.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.dashboards.catalog import (
    COMPOSE,
    PROMETHEUS_CONFIG,
    PROVISIONING,
    RULE_FILES,
    load_yaml,
    run,
    tool,
)

STACK = load_yaml(COMPOSE)
SERVICES: dict[str, dict[str, Any]] = STACK["services"]
PROMETHEUS = load_yaml(PROMETHEUS_CONFIG)


def _mounts(service: str) -> dict[str, Path]:
    """Container path -> host path of a service's bind mounts (named volumes skipped)."""
    mounts = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = (COMPOSE.parent / source).resolve()
    return mounts


def _host_port(address: str) -> tuple[str, int]:
    """(host, port) of "host:port" or of a URL."""
    parts = urlsplit(address if "://" in address else f"//{address}")
    assert parts.hostname is not None, address
    assert parts.port is not None, address
    return parts.hostname, parts.port


def test_stack_has_every_component() -> None:
    """Collector, processor, Jaeger, Prometheus, Alertmanager and Grafana are all there."""
    expected = {
        "otel-collector",
        "compaction-processor",
        "jaeger",
        "prometheus",
        "alertmanager",
        "grafana",
    }
    assert set(SERVICES) == expected


def test_images_are_pinned_and_ports_stay_on_loopback() -> None:
    """No floating image tags; every published port binds 127.0.0.1 only."""
    for name, service in SERVICES.items():
        if "image" in service and "build" not in service:
            image = service["image"]
            assert re.search(r":v?\d+\.\d+\.\d+$", image), f"{name}: pin {image}"
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: {port}"


def test_every_mounted_file_and_build_file_exists() -> None:
    """Bind-mount sources, the build context and the processor's container file exist."""
    for name in SERVICES:
        for target, source in _mounts(name).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) is missing"
    build = SERVICES["compaction-processor"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert (context / "pyproject.toml").is_file()
    assert (context / build["dockerfile"]).is_file(), build["dockerfile"]


def test_grafana_gets_the_tested_provisioning() -> None:
    """Grafana mounts our provisioning, and the dashboards where the provider looks."""
    mounts = _mounts("grafana")
    assert mounts["/etc/grafana/provisioning"] == PROVISIONING.resolve()
    provider = load_yaml(PROVISIONING / "dashboards" / "otel-compaction.yaml")["providers"][0]
    assert mounts[provider["options"]["path"]] == (PROVISIONING.parent / "dashboards").resolve()
    for source in load_yaml(PROVISIONING / "datasources" / "otel-compaction.yaml")["datasources"]:
        host, _ = _host_port(source["url"])
        assert host in SERVICES, source["url"]


def test_prometheus_gets_the_tested_config_and_rules() -> None:
    """Prometheus mounts dashboards/prometheus.yml, whose rule glob finds our rule files."""
    mounts = _mounts("prometheus")
    config_in_container = next(
        a.split("=", 1)[1] for a in SERVICES["prometheus"]["command"] if "--config.file" in a
    )
    assert mounts[config_in_container] == PROMETHEUS_CONFIG.resolve()
    [pattern] = PROMETHEUS["rule_files"]
    assert sorted(PROMETHEUS_CONFIG.parent.glob(pattern)) == RULE_FILES
    rules_dir = str(Path(config_in_container).parent / Path(pattern).parent)
    assert mounts[rules_dir] == RULE_FILES[0].parent.resolve()


@pytest.mark.prometheus
def test_promtool_checks_the_stack_prometheus_config() -> None:
    """`promtool check config` accepts the stack's Prometheus configuration and rules."""
    result = run(tool("promtool"), "check", "config", str(PROMETHEUS_CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_targets_are_compose_services() -> None:
    """Scrape targets and the Alertmanager address are services of the stack."""
    targets = [
        target
        for job in PROMETHEUS["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    ]
    targets += PROMETHEUS["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    for target in targets:
        host, _ = _host_port(target)
        assert host in SERVICES, target


def _collector() -> dict[str, Any]:
    config: dict[str, Any] = load_yaml(
        _mounts("otel-collector")["/etc/otelcol-contrib/config.yaml"]
    )
    return config


def _processor() -> dict[str, Any]:
    path = _mounts("compaction-processor")["/etc/otel-compaction/processor.yaml"]
    config: dict[str, Any] = load_yaml(path)
    return config


def test_collector_exports_to_jaeger_and_the_processor() -> None:
    """Every Collector exporter endpoint is a stack service, Jaeger and the processor among them."""
    exporters: dict[str, Any] = _collector()["exporters"]
    hosts = {
        _host_port(cfg["endpoint"])[0]
        for cfg in exporters.values()
        if isinstance(cfg, dict) and isinstance(cfg.get("endpoint"), str)
    }
    assert {"jaeger", "compaction-processor"} <= hosts
    assert hosts <= set(SERVICES) | {"0.0.0.0"}, hosts - set(SERVICES)


def test_processor_listens_where_the_collector_sends_and_sends_back() -> None:
    """The processor's OTLP port is the Collector's target; its findings reach a receiver."""
    processor, collector = _processor(), _collector()
    sent_to = {
        _host_port(cfg["endpoint"])
        for cfg in collector["exporters"].values()
        if isinstance(cfg, dict) and str(cfg.get("endpoint", "")).startswith("compaction-processor")
    }
    listen = {_host_port(processor["receivers"][k])[1] for k in ("otlp_grpc", "otlp_http")}
    assert {port for _, port in sent_to} <= listen
    host, port = _host_port(processor["forward"]["endpoint"])
    assert host == "otel-collector"
    receiver_ports = {
        _host_port(proto["endpoint"])[1]
        for receiver in collector["receivers"].values()
        for proto in receiver["protocols"].values()
    }
    assert port in receiver_ports


def test_prometheus_scrapes_the_collector_exporter_and_the_processor() -> None:
    """Scrape targets match the Collector's prometheus exporter and the processor's /metrics."""
    jobs = {j["job_name"]: j["static_configs"][0]["targets"] for j in PROMETHEUS["scrape_configs"]}
    exporter = next(
        cfg for key, cfg in _collector()["exporters"].items() if key.split("/")[0] == "prometheus"
    )
    assert jobs["otel-collector"] == [f"otel-collector:{_host_port(exporter['endpoint'])[1]}"]
    metrics_host, metrics_port = _host_port(_processor()["metrics"]["endpoint"])
    assert metrics_host in ("0.0.0.0", "::")
    assert jobs["otel-compaction-processor"] == [f"compaction-processor:{metrics_port}"]


def test_collector_prometheus_exporter_keeps_service_labels_and_exemplars() -> None:
    """service_name (the drill-down's Service) and exemplars need two exporter options."""
    exporter = next(
        cfg for key, cfg in _collector()["exporters"].items() if key.split("/")[0] == "prometheus"
    )
    assert exporter.get("resource_to_telemetry_conversion", {}).get("enabled") is True
    assert exporter.get("enable_open_metrics") is True
