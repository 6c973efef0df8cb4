"""Imports go one way: the pure stages import no SDK, no wrapt, no LLM client."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "otel_compaction"
PURE = ("signals", "lineage", "detectors", "inference")
FORBIDDEN = ("opentelemetry", "wrapt", "anthropic", "openai", "httpx", "langchain", "grpc")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("stage", PURE)
def test_pure_stages_import_no_sdk(stage: str) -> None:
    """signals/, lineage/, detectors/ and inference/ stay free of the OTel SDK, wrapt and the
    LLM SDKs."""
    offenders = [
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / stage).rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] in FORBIDDEN
    ]
    assert not offenders

