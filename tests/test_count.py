"""Foreign numbers become counts by one rule, wherever they arrive."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_compaction._count import COUNT_MAX, as_count


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (12, 12),
        (COUNT_MAX, COUNT_MAX),
        (True, None),
        (False, None),
        (-1, None),
        (COUNT_MAX + 1, None),
        (2**70, None),
        (12.0, 12),
        (12.9, 12),
        (-0.5, 0),
        (-1.0, None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (1e30, None),
        ("12", 12),
        (" 7 \n", 7),
        ("0012", 12),
        ("9223372036854775807", COUNT_MAX),
        ("9223372036854775808", None),
        ("12.5", None),
        ("1e3", None),
        ("-3", None),
        ("+3", None),
        ("", None),
        ("¹", None),
        ("١٢", None),
        ("nan", None),
        (None, None),
        ([3], None),
        ({"n": 3}, None),
        (b"12", None),
    ],
)
def test_a_value_is_a_count_by_the_documented_rule(value: Any, expected: int | None) -> None:
    """Ints (not bools) and finite floats (truncated) and ASCII digit strings in 0..int64 max
    are counts; negatives, NaN, infinities, larger numbers and other strings are not."""
    got = as_count(value)
    assert got == expected
    assert got is None or type(got) is int


class _Count(int):
    """An int subclass (an SDK's enum of a number, numpy's alike)."""


def test_an_int_subclass_is_read_as_a_plain_int() -> None:
    """A subclass of int counts, and comes back as a plain int."""
    got = as_count(_Count(5))
    assert got == 5
    assert type(got) is int


@given(st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
def test_a_count_is_always_a_plain_int_in_range(value: int | float | str) -> None:
    """Whatever comes in, what comes out is None or a plain int in 0..int64 max."""
    got = as_count(value)
    assert got is None or (type(got) is int and 0 <= got <= COUNT_MAX)
