"""The distribution builds, and the wheel installs and imports in a clean environment."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_and_sdist_build_and_the_wheel_imports(tmp_path: Path) -> None:
    """`python -m build` makes both artifacts; the wheel's console script runs in a new venv."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheels = list(dist.glob("otel_compaction-*.whl"))
    sdists = list(dist.glob("otel_compaction-*.tar.gz"))
    assert len(wheels) == 1
    assert len(sdists) == 1
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheels[0])],
        check=True,
        capture_output=True,
    )
    probe = (
        "import otel_compaction, otel_compaction.policy, otel_compaction.analyzer;"
        "from importlib.metadata import entry_points;"
        "eps = entry_points(group='opentelemetry_instrumentor');"
        "print(sorted(e.name for e in eps))"
    )
    out = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True)
    assert "compaction" in out.stdout
    assert (env_dir / "lib").exists()
    typed = list((env_dir / "lib").glob("python3*/site-packages/otel_compaction/py.typed"))
    assert typed, "py.typed must ship in the wheel"
    helped = subprocess.run(
        [str(env_dir / "bin" / "otel-compaction"), "--help"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "analyze" in helped.stdout
