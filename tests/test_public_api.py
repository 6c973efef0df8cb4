"""The package's public namespace: what the docs promise, sorted, and nothing missing."""

from __future__ import annotations

import importlib

import otel_compaction


def test_all_is_sorted_and_resolvable() -> None:
    """``__all__`` is sorted and every name in it exists."""
    assert otel_compaction.__all__ == sorted(otel_compaction.__all__)
    for name in otel_compaction.__all__:
        assert hasattr(otel_compaction, name), name


def test_design_api_names_are_exported() -> None:
    """The documented public names (README.md) import from the top-level package and policy."""
    for name in ("CompactionInstrumentor", "conversation", "report_phase", "record_compaction"):
        assert name in otel_compaction.__all__
    assert "compaction" in otel_compaction.__all__
    for name in ("advise", "Advice", "AdviceAction"):  # acting on a finding in process
        assert name in otel_compaction.__all__
    policy = importlib.import_module("otel_compaction.policy")
    for name in (
        "should_compact",
        "check_compaction_health",
        "PhaseBoundaryCompactionError",
        "CompactionReexpansionError",
        "CompactionAdvisor",
    ):
        assert hasattr(policy, name), name


def test_version_is_the_distribution_version() -> None:
    """``__version__`` is the version the installed distribution's metadata carries."""
    from importlib.metadata import version

    assert otel_compaction.__version__ == version("otel-compaction")
