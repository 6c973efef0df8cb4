"""Imports go one way: the pure stages import no SDK, no wrapt, no LLM client, and read no
ambient state (clock, lock, context variable, process id); readers of telemetry go through
the OTLP library, never through the service."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from otel_compaction.cli._extras import PROCESSOR

PACKAGE = Path(__file__).resolve().parents[1] / "otel_compaction"
PURE = ("signals", "lineage", "detectors", "inference", "model.py")
FORBIDDEN = ("opentelemetry", "wrapt", "anthropic", "openai", "httpx", "langchain", "grpc")
AMBIENT = ("contextvars", "threading", "os", "time")
"""Modules through which code reads the clock, the thread or task it runs in, or the
process: the instrumentation gives the pure stages what they need of them."""


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, ``from package import module`` counted as the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _sources(stage: Path) -> list[Path]:
    """The Python files of a stage: the folder's, or the one module."""
    return [stage] if stage.is_file() else sorted(stage.rglob("*.py"))


def _top_level(stage: Path, modules: tuple[str, ...]) -> list[str]:
    """The imports of ``stage`` whose top-level module is one of ``modules``."""
    return [
        f"{path.name}: {name}"
        for path in _sources(stage)
        for name in sorted(_imports(path))
        if name.split(".")[0] in modules
    ]


@pytest.mark.parametrize("stage", PURE)
def test_pure_stages_import_no_sdk(stage: str) -> None:
    """signals/, lineage/, detectors/, inference/ and model.py stay free of the OTel SDK,
    wrapt and the LLM SDKs."""
    assert _top_level(PACKAGE / stage, FORBIDDEN) == []


@pytest.mark.parametrize("stage", PURE)
def test_pure_stages_read_no_ambient_state(stage: str) -> None:
    """The pure stages import no contextvars, threading, os or time: the clock, the lock,
    the caller's thread or task and the process's ids are given to them as arguments."""
    assert _top_level(PACKAGE / stage, AMBIENT) == []


def test_an_ambient_import_is_found(tmp_path: Path) -> None:
    """A context variable or a clock imported in a function, or a submodule of os, is
    reported."""
    module = tmp_path / "stage.py"
    module.write_text(
        "import os.path\ndef f():\n    from contextvars import ContextVar\n    import time\n",
        encoding="utf-8",
    )
    assert _top_level(module, AMBIENT) == [
        "stage.py: contextvars",
        "stage.py: contextvars.ContextVar",
        "stage.py: os.path",
        "stage.py: time",
    ]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _internal_imports(name: str, path: Path) -> set[str]:
    """The package's modules ``name`` imports, anywhere in it (in functions and under
    ``TYPE_CHECKING`` too): a module, and the packages whose ``__init__`` importing it
    runs (but its own packages', which are running already)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                targets.add(child if child in MODULES else base)
    found: set[str] = set()
    for target in targets:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            module = ".".join(parts[:end])
            if module in MODULES and not (name == module or name.startswith(module + ".")):
                found.add(module)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph``, as the modules along it, or [] (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_package_has_no_import_cycle() -> None:
    """No module of ``otel_compaction`` imports, through others, one that imports it:
    lazy imports in functions and ``TYPE_CHECKING`` imports count too."""
    graph = {name: _internal_imports(name, path) for name, path in MODULES.items()}
    assert _cycle(graph) == []


def test_a_cycle_is_found() -> None:
    """The search finds a cycle three modules long, and none in a chain."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_imports_are_resolved_to_modules() -> None:
    """``from package import module`` names the module; a lazy import in a function and the
    ``__init__`` a deeper import runs count; the importer's own packages do not."""
    begin = "otel_compaction.instrument._begin"
    imports = _internal_imports(begin, MODULES[begin])
    assert "otel_compaction.instrument._scope" in imports  # from package import module
    assert "otel_compaction.instrument" not in imports  # its own package
    assert "otel_compaction" not in imports
    policy = _internal_imports("otel_compaction.policy", MODULES["otel_compaction.policy"])
    assert "otel_compaction.instrument._runtime" in policy  # imported in a function
    assert "otel_compaction.instrument" in policy  # the __init__ that import runs


def _offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / folder).rglob("*.py"))
        for name in sorted(_imports(path))
        if any(name == f or name.startswith(f"{f}.") for f in forbidden)
    ]


@pytest.mark.parametrize("reader", ["transcripts", "report", "demo"])
def test_readers_of_telemetry_do_not_import_the_service(reader: str) -> None:
    """transcripts/, report/ and demo/ read OTLP through otlp/, never through processor/.

    Only ``cli/processor.py`` imports the service, to start it."""
    assert _offenders(reader, ("otel_compaction.processor",)) == []


def test_the_otlp_library_imports_neither_the_service_nor_its_extra() -> None:
    """otlp/ imports nothing from processor/ and none of the [processor] extra's modules."""
    forbidden = ("otel_compaction.processor", "otel_compaction.cli", *PROCESSOR.modules)
    assert _offenders("otlp", forbidden) == []
