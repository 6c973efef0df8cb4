"""The real Collector and Jaeger, as ``scripts/build-otel`` builds them from their Go modules.

A binary is built once per manifest into the cache outside the checkout and
reused; a missing one is built here (minutes; ``scripts/test`` builds both before
pytest runs). A build that fails fails the test that needs it, never skips it.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build-otel"
BUILD_TIMEOUT_SECONDS = 3600


@functools.cache
def binary(target: str) -> Path:
    """The path of the ``collector`` or ``jaeger`` binary, built when missing."""
    try:
        result = subprocess.run(
            [str(BUILD_SCRIPT), target],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as exc:  # no bash: nothing else runs either
        pytest.fail(f"cannot run {BUILD_SCRIPT}: {exc}")
    if result.returncode != 0:
        pytest.fail(f"scripts/build-otel {target} failed:\n{result.stderr[-4000:]}")
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


def collector() -> Path:
    """The Collector built from ``collector/builder-config.yaml``."""
    return binary("collector")


def jaeger() -> Path:
    """Jaeger v2 built from ``collector/jaeger/go.mod``."""
    return binary("jaeger")
