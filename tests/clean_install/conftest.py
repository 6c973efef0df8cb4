"""A clean install, as a user makes it: the built wheel in fresh virtual environments.

The wheel is built once per test session (``python -m build``: from the sdist); each
environment is created once per session with only what its tests need, by the
project's own pip (``pip --python``: the new environment gets no pip of its
own), from the package index through pip's cache. Nothing of the checkout or of
the project's ``.venv`` is visible in them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.otlp_http import OtlpHttpReceiver

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built once: ``python -m build`` makes the sdist, then the wheel
    from the unpacked sdist (so no stale ``build/`` folder of the checkout leaks into it)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    """The distribution's wheel."""
    (built,) = dist.glob("otel_compaction-*.whl")
    return built


@dataclass(frozen=True)
class CleanEnv:
    """A fresh virtual environment holding the wheel and the named requirements."""

    path: Path

    def bin(self, name: str) -> str:
        """The path of a console script (or the interpreter) of this environment."""
        return str(self.path / "bin" / name)

    def run(
        self, *argv: str, env: dict[str, str] | None = None, timeout: float = 120, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run a command of this environment (argv[0] a console script name), never raising."""
        return subprocess.run(
            [self.bin(argv[0]), *argv[1:]],
            env=env or user_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kw,
        )


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no OTEL_*, no keys, no project paths; loopback direct."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "ANTHROPIC_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))
    }
    keep["NO_PROXY"] = keep["no_proxy"] = "127.0.0.1,localhost"
    keep.update(extra)
    return keep


@pytest.fixture(scope="session")
def clean_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., CleanEnv]:
    """``clean_env(extras, *requirements)``: a fresh environment, made once per session."""
    made: dict[tuple[str, tuple[str, ...]], CleanEnv] = {}

    def make(extras: str = "", *requirements: str) -> CleanEnv:
        key = (extras, requirements)
        if key not in made:
            path = tmp_path_factory.mktemp("venv")
            venv.EnvBuilder(with_pip=False).create(path)
            target = f"{wheel}[{extras}]" if extras else str(wheel)
            done = subprocess.run(
                [sys.executable, "-m", "pip", "--python", str(path / "bin" / "python"),
                 "install", "--quiet", "--no-compile", "--disable-pip-version-check",
                 target, *requirements],
                capture_output=True, text=True, check=False, env=user_env(),
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            made[key] = CleanEnv(path)
        return made[key]

    return make


@pytest.fixture(scope="session")
def core_env(clean_env: Callable[..., CleanEnv]) -> CleanEnv:
    """The wheel and an LLM SDK beside it, nothing else: what `pip install otel-compaction
    anthropic` gives."""
    return clean_env("", "anthropic")


def json_documents(text: str) -> list[Any]:
    """The JSON values printed one after another (the console exporters' output)."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return out
        value, index = decoder.raw_decode(text, index)
        out.append(value)


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpHttpReceiver]:
    """An OTLP/HTTP receiver running for the test."""
    with OtlpHttpReceiver() as receiver:
        yield receiver
