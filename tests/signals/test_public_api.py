"""The signals namespace: one sorted __all__, every name importable."""

from __future__ import annotations

import otel_compaction.signals as signals


def _isort_key(name: str) -> tuple[int, str]:
    """Constants first, then classes, then functions (ruff's RUF022 order)."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_all_is_sorted_and_importable() -> None:
    """signals.__all__ is unique, sorted (constants, classes, functions), and importable."""
    assert len(set(signals.__all__)) == len(signals.__all__)
    assert list(signals.__all__) == sorted(signals.__all__, key=_isort_key)
    assert all(hasattr(signals, name) for name in signals.__all__)
