"""The truth harness's modules (``benchmarks/truth_*.py``) and a fixed sample of its runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))  # the benchmark's modules import each other as siblings

SEED = 7
"""The CI sample's base seed: run ``i`` of class ``c`` is ``"7:c:i"``."""
RUNS_PER_CLASS = 2


@pytest.fixture(scope="session")
def sample() -> dict[tuple[str, int], Any]:
    """Two runs of every class, played and scored once for all the tests of this folder."""
    from truth_classes import CLASSES
    from truth_harness import play

    return {(n, i): play(n, i, SEED) for n in CLASSES for i in range(RUNS_PER_CLASS)}
