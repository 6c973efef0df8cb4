"""The distribution builds, and the wheel installs and imports in a clean environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.clean_install.conftest import ROOT, CleanEnv

pytestmark = pytest.mark.slow


def test_sdist_builds(tmp_path: Path) -> None:
    """`python -m build --sdist` makes the source distribution (the wheel is the session's)."""
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    assert len(list(tmp_path.glob("otel_compaction-*.tar.gz"))) == 1


def test_wheel_installs_with_its_entry_points_and_types(core_env: CleanEnv) -> None:
    """In a new venv the wheel imports, registers its instrumentor and the distro, has py.typed."""
    probe = (
        "import otel_compaction, otel_compaction.policy, otel_compaction.analyzer;"
        "from importlib.metadata import entry_points;"
        "print(sorted(e.name for e in entry_points(group='opentelemetry_instrumentor')));"
        "print(sorted(e.name for e in entry_points(group='opentelemetry_configurator')))"
    )
    done = core_env.run("python", "-c", probe)
    assert done.returncode == 0, done.stderr
    instrumentors, configurators = done.stdout.splitlines()
    assert "compaction" in instrumentors
    assert configurators == "['configurator']"  # opentelemetry-distro's, and only it
    typed = list(core_env.path.glob("lib/python3*/site-packages/otel_compaction/py.typed"))
    assert typed, "py.typed must ship in the wheel"
    helped = core_env.run("otel-compaction", "--help")
    assert "analyze" in helped.stdout
