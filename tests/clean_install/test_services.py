"""Point 6 of a clean install: the processor says where it listens and what it cannot bind,
and ``import`` replays an OTLP/JSON file to an OTLP endpoint."""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clean_install.conftest import CleanEnv, user_env
from tests.otlp_http import OtlpHttpReceiver
from tests.processor.service_util import wait_for
from tests.transcripts import TESTDATA

pytestmark = pytest.mark.slow

CONFIG = """\
receivers:
  otlp_grpc: 127.0.0.1:0
  otlp_http: 127.0.0.1:0
metrics:
  endpoint: 127.0.0.1:0
output:
  mode: tap
"""


@pytest.fixture(scope="module")
def processor_env(clean_env: Callable[..., CleanEnv]) -> CleanEnv:
    """The wheel with its processor extra."""
    return clean_env("processor")


def test_processor_logs_its_config_file_addresses_and_mode_at_start(
    processor_env: CleanEnv, tmp_path: Path
) -> None:
    """Started from a file, it names the file, each bound address and the mode; SIGTERM exits 0."""
    config = tmp_path / "processor.yaml"
    config.write_text(CONFIG)
    err = tmp_path / "stderr"
    with err.open("w") as handle:
        process = subprocess.Popen(
            [processor_env.bin("otel-compaction"), "processor", "--config", str(config)],
            stdout=subprocess.DEVNULL, stderr=handle, env=user_env(), text=True,
        )  # fmt: skip
    try:
        assert wait_for(lambda: "listening:" in err.read_text(), timeout=60), err.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    log = err.read_text()
    assert f"configuration file {config}" in log
    (line,) = [x for x in log.splitlines() if "listening:" in x]
    assert "tap mode" in line
    for what in ("OTLP/gRPC on 127.0.0.1:", "OTLP/HTTP on 127.0.0.1:", "/metrics, /healthz"):
        assert what in line
    assert ":0," not in line  # the bound ports, not the configured 0


def test_processor_names_the_address_it_cannot_bind(processor_env: CleanEnv) -> None:
    """An OTLP/HTTP port already taken: exit 1 and the error names the receiver and address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        done = processor_env.run(
            "otel-compaction", "processor", "--otlp-grpc", "127.0.0.1:0", "--otlp-http", address,
            "--metrics", "127.0.0.1:0",
        )  # fmt: skip
    assert done.returncode == 1
    assert f"cannot start: cannot listen for OTLP/HTTP on {address}" in done.stderr


def test_import_replays_an_otlp_json_file_to_the_endpoint(
    core_env: CleanEnv, otlp_receiver: OtlpHttpReceiver, tmp_path: Path
) -> None:
    """A trace file written by `import --out` goes to --otlp-endpoint span for span."""
    transcript = TESTDATA / "claude_basic.jsonl"
    written = core_env.run("otel-compaction", "import", str(transcript), "--out", "traces.jsonl",
                           cwd=tmp_path)  # fmt: skip
    assert written.returncode == 0, written.stderr
    sent = written.stderr.split(": ")[-1].split(" spans")[0]
    done = core_env.run("otel-compaction", "import", "traces.jsonl", "--otlp-endpoint",
                        otlp_receiver.endpoint, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1 OTLP/JSON file replayed" in done.stderr
    assert len(otlp_receiver.spans()) == int(sent) > 0
