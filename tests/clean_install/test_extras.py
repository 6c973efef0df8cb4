"""Point 3 of a clean install: a command whose extra is missing names the pip install in one
line, and its --help shows every option anyway."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clean_install.conftest import CleanEnv

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["processor"], "processor"),
        (["processor", "--check"], "processor"),
        (["demo"], "demo"),
        (["analyze", "--format", "html", "traces.jsonl"], "report"),
    ],
)
def test_missing_extra_is_one_line_with_the_pip_install(
    core_env: CleanEnv, tmp_path: Path, argv: list[str], extra: str
) -> None:
    """Exit 2, nothing on stdout, one stderr line ending in the exact pip install."""
    done = core_env.run("otel-compaction", *argv, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.rstrip().endswith(f"pip install 'otel-compaction[{extra}]'")
    assert f"needs the {extra} extra (missing: " in done.stderr


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("processor", ("--config", "--otlp-grpc", "--otlp-http", "--metrics", "--mode", "--check")),
        ("demo", ("--out", "--otlp-endpoint", "--scenario", "--quiet")),
        ("analyze", ("--format", "--out", "--max-charts", "--progress")),
        ("import", ("--otlp-endpoint", "--out", "--otlp-protocol", "--service-name")),
    ],
)
def test_help_shows_the_full_options_without_the_extra(
    core_env: CleanEnv, command: str, options: tuple[str, ...]
) -> None:
    """`otel-compaction COMMAND --help` lists every option even when the extra is missing."""
    done = core_env.run("otel-compaction", command, "--help")
    assert done.returncode == 0, done.stderr
    for option in options:
        assert option in done.stdout, option
