"""Preserve-schema coverage of summaries (docs/concepts.md#the-preserve-schema)."""

from __future__ import annotations

import pytest

from otel_compaction.lineage import schema_coverage

FIELDS = ("goal", "plan", "decisions", "open_errors", "next_action")


@pytest.mark.parametrize(
    "text",
    [
        "## Goal\nx\n## Plan\nx\n## Decisions\nx\n## Open errors\nx\n## Next action\nx",
        "goal: a\nplan: b\ndecisions: c\nopen_errors: d\nnext_action: e",
        '{"goal": "a", "plan": [], "decisions": [], "open_errors": [], "next_action": "x"}',
        "- **Goal**: a\n- **Plan**: b\n- **Decision**: c\n- **Open-Errors**: d\n- Next Action: e",
        "**GOAL**\na\n**PLAN**\nb\n1. Decisions: c\n<open_errors>d</open_errors>\n"
        "### next actions\n",
    ],
)
def test_all_fields_found_in_common_shapes(text: str) -> None:
    """Headings, keys, JSON keys, bold lines and tags all count, case-insensitively."""
    assert schema_coverage(text, FIELDS) == (1.0, ())


def test_prose_mentions_do_not_count() -> None:
    """A field name used in a sentence is not a field of the summary."""
    text = "The goal was to fix the test; the plan is unclear.\nNext action: rerun the suite"
    coverage, missing = schema_coverage(text, FIELDS)
    assert coverage == pytest.approx(0.2)
    assert missing == ("goal", "plan", "decisions", "open_errors")


def test_missing_fields_in_schema_order() -> None:
    """Missing fields are listed in the order of the schema."""
    coverage, missing = schema_coverage("## Next action\nx\n## Goal\ny", FIELDS)
    assert coverage == pytest.approx(0.4)
    assert missing == ("plan", "decisions", "open_errors")


def test_no_text_has_no_coverage() -> None:
    """Without a summary text there is nothing to score: None, nothing missing."""
    assert schema_coverage(None, FIELDS) == (None, ())


def test_empty_text_covers_nothing() -> None:
    """An empty summary covers none of the fields."""
    assert schema_coverage("", FIELDS) == (0.0, FIELDS)
