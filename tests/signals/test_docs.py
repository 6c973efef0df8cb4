"""docs/signals.md matches the code: window table, tool table, emission rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from otel_compaction.signals import DEFAULT_TOOL_CATEGORIES, MODEL_WINDOWS, emission_matrix
from otel_compaction.signals.tools import CATEGORIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "signals.md"
ROW = re.compile(r"^\|(.+)\|\s*([\d,]+)\s*\|$")


def _section(title: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start:end].splitlines()


def test_window_table_matches_model_windows() -> None:
    """Every table row names models in backticks with the window MODEL_WINDOWS holds."""
    documented: dict[str, int] = {}
    for line in _section("### Context windows"):
        match = ROW.match(line.strip())
        if match:
            window = int(match.group(2).replace(",", ""))
            for name in re.findall(r"`([^`]+)`", match.group(1)):
                documented[name] = window
    assert documented == dict(MODEL_WINDOWS)


def test_tool_table_lists_every_default_name() -> None:
    """The tool-category table lists each default tool name in its category's row."""
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in _section("### States and evidence")
        if line.startswith("| `")
    }
    for name, category in DEFAULT_TOOL_CATEGORIES.items():
        assert f"`{name}`" in rows[category.value], name


@pytest.mark.parametrize("phase", ["explore", "hypothesize", "patch", "verify"])
def test_emission_rows_match(phase: str) -> None:
    """The documented emission row of each default phase is the one the filter uses."""
    row = next(line for line in _section("**Emissions.**") if line.startswith(f"| {phase} |"))
    numbers = [float(cell) for cell in row.strip("|").split("|")[1:]]
    assert len(numbers) == len(CATEGORIES)
    index = ("explore", "hypothesize", "patch", "verify").index(phase)
    assert numbers == pytest.approx(
        emission_matrix(("explore", "hypothesize", "patch", "verify"))[index].tolist()
    )
