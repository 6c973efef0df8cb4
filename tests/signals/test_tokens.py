"""The token estimate for text without reported usage."""

from __future__ import annotations

import pytest

from otel_compaction.signals import estimate_tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("x" * 401, 101)],
)
def test_estimate_is_ceil_of_a_quarter_of_the_length(text: str, tokens: int) -> None:
    """estimate_tokens is ceil(len / 4), and 0 for the empty string."""
    assert estimate_tokens(text) == tokens
