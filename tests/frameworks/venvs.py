"""Framework virtual environments: one per framework, cached outside the checkout.

Frameworks pin what they need (aider pins its openai and LiteLLM, strands its
OpenTelemetry instrumentations), so each one the tests drive for real gets an
environment of its own, built from a manifest, ``tests/frameworks/venvs/NAME.txt``
(pip requirements, pinned), plus the package's own runtime dependencies read from
``pyproject.toml``. The checkout itself is not installed there: a test runs the
environment's interpreter with the checkout on ``PYTHONPATH``, so one cached
environment serves every clone.

The cache folder is ``venvs`` in the one ``scripts/build-otel`` keeps its binaries
in (``$OTEL_COMPACTION_CACHE``, default ``${XDG_CACHE_HOME:-~/.cache}/otel-compaction``),
one folder per manifest, named by a hash of the manifest, the package's dependencies
and the interpreter's version, so an edit of either builds a new one. Building is
atomic (a temporary folder renamed into place) and serialised by a file lock, so two
test runs never see half an environment.

``python -m tests.frameworks.venvs [NAME ...]`` builds the named ones (all when
none is named) and prints each interpreter's path; ``scripts/test`` runs it before
the suite so that the time spent installing is visible apart from the tests'.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = Path(__file__).resolve().parent / "venvs"


def cache_root() -> Path:
    """Where the environments live: outside the checkout, shared by clones."""
    base = os.environ.get("OTEL_COMPACTION_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = str(Path(xdg) if xdg else Path.home() / ".cache") + "/otel-compaction"
    return Path(base) / "venvs"


def names() -> list[str]:
    """The manifests' names, sorted."""
    return sorted(p.stem for p in MANIFESTS.glob("*.txt"))


def _package_dependencies() -> list[str]:
    """The package's runtime dependencies, as pyproject.toml declares them."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    return [str(d) for d in project["dependencies"]]


def _key(manifest: Path) -> str:
    digest = hashlib.sha256()
    digest.update(manifest.read_bytes())
    for dep in _package_dependencies():
        digest.update(dep.encode() + b"\n")
    digest.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return digest.hexdigest()[:12]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def framework_python(name: str) -> Path:
    """The interpreter of framework ``name``'s environment, built first if missing.

    Raises:
        FileNotFoundError: no manifest of that name.
        subprocess.CalledProcessError: pip could not install the manifest (its
            output is on stderr).
    """
    manifest = MANIFESTS / f"{name}.txt"
    if not manifest.is_file():
        raise FileNotFoundError(f"no framework manifest {manifest}")
    target = cache_root() / f"{name}-{_key(manifest)}"
    python = target / "bin" / "python"
    if python.exists():
        return python
    with _locked(cache_root() / f".{name}.lock"):
        if python.exists():
            return python
        building = target.with_name(target.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        venv.EnvBuilder(with_pip=True).create(building)
        subprocess.run(
            [
                str(building / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                str(manifest),
                *_package_dependencies(),
            ],
            check=True,
        )
        building.rename(target)
    return python


def run_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment for a framework driver: the checkout importable, no network lookups.

    LiteLLM fetches its model price map at import unless told to read its local copy;
    the tests never let it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHON"))}
    env["PYTHONPATH"] = str(ROOT)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


PARALLEL_BUILDS = 4
"""Environments built at once by :func:`main`: a cold build is mostly downloading and
unpacking wheels, so four at a time on two cores take about a third of the time of one
after another."""


def main(argv: list[str]) -> int:
    """Build the named environments (all when none is named), several at once; print each
    interpreter. Exit 1, after the others are built, when one could not be."""
    wanted = argv or names()
    with ThreadPoolExecutor(max_workers=PARALLEL_BUILDS) as pool:
        futures = {name: pool.submit(framework_python, name) for name in wanted}
    failed = 0
    for name, future in futures.items():
        try:
            print(f"{name}: {future.result()}", flush=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"{name}: could not be built: {exc}", file=sys.stderr, flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
