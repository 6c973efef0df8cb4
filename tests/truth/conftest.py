"""A fixed sample of the truth harness's runs (``benchmarks/truth/``), shared by the folder."""

from __future__ import annotations

from typing import Any

import pytest

SEED = 7
"""The CI sample's base seed: run ``i`` of class ``c`` is ``"7:c:i"``."""
RUNS_PER_CLASS = 2


@pytest.fixture(scope="session")
def sample() -> dict[tuple[str, int], Any]:
    """Two runs of every class, played and scored once for all the tests of this folder."""
    from benchmarks.truth.classes import CLASSES
    from benchmarks.truth.harness import play

    return {(n, i): play(n, i, SEED) for n in CLASSES for i in range(RUNS_PER_CLASS)}
