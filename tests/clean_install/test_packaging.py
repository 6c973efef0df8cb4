"""The distribution builds, and the wheel installs and imports in a clean environment."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.clean_install.conftest import CleanEnv

pytestmark = pytest.mark.slow


def test_sdist_holds_the_package_and_the_readme(dist: Path) -> None:
    """The session's build made one sdist (the wheel was built from it) with the sources."""
    (sdist,) = dist.glob("otel_compaction-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"README.md", "pyproject.toml", "otel_compaction/py.typed"} <= names
    assert "otel_compaction/instrument/_instrumentor.py" in names


def test_wheel_installs_with_its_entry_points_and_types(core_env: CleanEnv) -> None:
    """In a new venv the wheel imports, registers its instrumentor and the distro, has py.typed."""
    probe = (
        "import otel_compaction, otel_compaction.policy, otel_compaction.engine;"
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
