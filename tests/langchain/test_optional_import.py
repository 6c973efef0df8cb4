"""The package imports without langchain-core; only the LangChain-bound names need it."""

from __future__ import annotations

import importlib
import sys

import pytest

PACKAGE = "otel_compaction.instrument.langchain"


def test_scope_imports_without_langchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without langchain-core the SDK layer can import the scope; install is an ImportError."""
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.partition(".")[0] == "langchain_core"]:
        monkeypatch.setitem(sys.modules, name, None)

    scope = importlib.import_module(PACKAGE + "._scope")
    assert scope.current_call() is None
    package = importlib.import_module(PACKAGE)
    with pytest.raises(ImportError):
        package.install  # noqa: B018 - the lazy attribute access is what is tested
