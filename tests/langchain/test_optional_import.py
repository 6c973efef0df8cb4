"""The package imports without langchain-core; only the LangChain-bound names need it."""

from __future__ import annotations

import importlib
import sys

import pytest

PACKAGE = "otel_compaction.instrument.langchain"


def test_scope_imports_without_langchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without langchain-core the SDK layer reads the framework scope (none: no run is in
    flight) without importing the LangChain package; install is an ImportError."""
    sdk_layer = ("otel_compaction.instrument._scope", "otel_compaction.instrument._framework")
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.partition(".")[0] == "langchain_core"]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in sdk_layer:  # imported afresh, restored after the test
        monkeypatch.delitem(sys.modules, name, raising=False)

    scope = importlib.import_module(sdk_layer[0])
    assert scope.framework_call() is None
    assert PACKAGE not in sys.modules
    package = importlib.import_module(PACKAGE)
    with pytest.raises(ImportError):
        package.install  # noqa: B018 - the lazy attribute access is what is tested
