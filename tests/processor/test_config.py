"""The processor's configuration: defaults, files, overrides, and every error at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_compaction.cli import main
from otel_compaction.processor.config import ConfigError, endpoint_errors, load_config


def test_defaults_work_without_a_file() -> None:
    """No file: loopback listeners on the documented ports, tap mode, findings logged."""
    config = load_config()
    assert config.receivers.otlp_grpc == "127.0.0.1:4317"
    assert config.receivers.otlp_http == "127.0.0.1:4318"
    assert config.metrics.endpoint == "127.0.0.1:9464"
    assert config.output.mode == "tap"
    assert config.output.log_findings is True
    assert config.forward.endpoint is None


def test_yaml_and_json_files_are_read(tmp_path: Path) -> None:
    """The same settings load from YAML and from JSON."""
    body = {"output": {"mode": "tap"}, "detectors": {"transition_veto": 0.5}}
    (tmp_path / "c.json").write_text(json.dumps(body))
    (tmp_path / "c.yaml").write_text("output:\n  mode: tap\ndetectors:\n  transition_veto: 0.5\n")
    for name in ("c.json", "c.yaml"):
        assert load_config(tmp_path / name).settings().transition_veto == 0.5


def test_overrides_win_over_the_file(tmp_path: Path) -> None:
    """Command-line overrides replace the file's values, field by field."""
    (tmp_path / "c.yaml").write_text("receivers:\n  otlp_grpc: 127.0.0.1:5000\n  otlp_http: null\n")
    config = load_config(tmp_path / "c.yaml", {"receivers": {"otlp_grpc": "127.0.0.1:6000"}})
    assert config.receivers.otlp_grpc == "127.0.0.1:6000"
    assert config.receivers.otlp_http is None


def test_every_error_is_listed_at_once(tmp_path: Path) -> None:
    """Field errors, cross-field errors and detector thresholds are reported together."""
    (tmp_path / "c.yaml").write_text(
        "receivers:\n  otlp_grpc: '127.0.0.1:99999'\n  otlp_http: 'no port'\n"
        "  tls: {cert_file: /nonexistent.pem, key_file: /nonexistent.key}\n"
        "output:\n  mode: enrich\n"
        "detectors:\n  transition_veto: 3\n  no_such_threshold: 1\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "c.yaml")
    text = "\n".join(info.value.errors)
    for expected in (
        "receivers.otlp_grpc",
        "receivers.otlp_http",
        "receivers.tls.cert_file",
        "receivers.tls.key_file",
        "forward.endpoint",
        "detectors.transition_veto",
        "detectors.no_such_threshold",
    ):
        assert expected in text, text


def test_type_errors_and_detector_errors_are_listed_together(tmp_path: Path) -> None:
    """Even when pydantic rejects a field, a bad threshold is still reported."""
    (tmp_path / "c.yaml").write_text(
        "processing:\n  reorder_window_seconds: -1\ndetectors:\n  hard_ceiling: 7\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "c.yaml")
    assert len(info.value.errors) == 2


@pytest.mark.parametrize(
    ("value", "ok"),
    [("127.0.0.1:4317", True), ("[::1]:0", True), ("collector-0.svc:4317", True),
     ("4317", False), (":4317", False), ("host:port", False), ("bad_host!:1", False)],
)  # fmt: skip
def test_endpoint_validation(value: str, ok: bool) -> None:
    """HOST:PORT listen addresses are checked for a host and a port in range."""
    assert (endpoint_errors(value) == []) is ok


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    """A YAML list or scalar at the top level is one clear error, not a traceback."""
    (tmp_path / "c.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(tmp_path / "c.yaml")


def test_cli_check_prints_every_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``processor --check`` on a bad file names each problem on stderr and exits 2."""
    (tmp_path / "c.yaml").write_text("output:\n  mode: sideways\nforward:\n  protocol: smoke\n")
    status = main(["processor", "--config", str(tmp_path / "c.yaml"), "--check"])
    err = capsys.readouterr().err
    assert status == 2
    assert "output.mode" in err
    assert "forward.protocol" in err


def test_cli_check_accepts_flags_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """``processor --check`` with only address flags validates and exits 0."""
    status = main(
        ["processor", "--otlp-grpc", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--check"]
    )
    assert status == 0
    assert "ok" in capsys.readouterr().err
