"""Reading attribute values from their encoded bytes gives what the parsed AnyValue gives."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from otel_compaction._count import as_count
from otel_compaction.otlp import values
from otel_compaction.otlp.attributes import any_value as to_any_value

# The readers as they were written against a parsed ``AnyValue`` (the reference).


def _ref_int_of(value: AnyValue) -> int | None:
    number: int = value.int_value
    return number if number else as_count(values.any_value(value))


def _ref_str_of(value: AnyValue) -> str | None:
    return value.string_value or None


def _ref_strs_of(value: AnyValue) -> tuple[str, ...]:
    return tuple(
        sys.intern(t) for e in value.array_value.values if (t := e.string_value) and len(t) <= 64
    )


def _ref_ints_of(value: AnyValue) -> tuple[int, ...]:
    out = []
    for element in value.array_value.values:
        number = element.int_value or as_count(values.any_value(element))
        if number is not None and number >= 0:
            out.append(number)
    return tuple(out)


SCALARS = st.one_of(
    st.sampled_from(["", "chat", "reported", "12", " 7 ", "1e3", "x" * 70, "é" * 80, "y" * 200]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, 127, 128, 16_383, 16_384, 2**21 - 1, 2**21, 2**28, 2**35, 2**62]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=40), st.just(None))


def _encoded(value: Any) -> bytes:
    return b"" if value is None else to_any_value(value).SerializeToString()


# One value, or two concatenated (a oneof set twice: the last one wins), as a
# sender may legally encode it.
RAWS = st.one_of(
    VALUES.map(_encoded),
    st.tuples(VALUES, VALUES).map(lambda pair: _encoded(pair[0]) + _encoded(pair[1])),
)


@settings(max_examples=1500)
@given(RAWS)
def test_every_reader_agrees_with_the_parsed_value(raw: bytes) -> None:
    """int_of, str_of, word_of, window_of, strs_of, ints_of and plain read bytes as parsed."""
    parsed = AnyValue.FromString(raw)
    assert values.int_of(raw) == _ref_int_of(parsed)
    assert values.str_of(raw) == _ref_str_of(parsed)
    assert values.word_of(raw) == values.as_word(_ref_str_of(parsed))
    assert values.window_of(raw) == values.as_window(_ref_int_of(parsed))
    assert values.strs_of(raw) == _ref_strs_of(parsed)
    assert values.ints_of(raw) == _ref_ints_of(parsed)
    assert _same(values.plain(raw), values.any_value(parsed))


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b or (a != a and b != b))


def test_absent_keys_read_as_nothing() -> None:
    """No value (the key is not on the span) reads as None or an empty tuple."""
    assert values.int_of(None) is None
    assert values.str_of(None) is None
    assert values.word_of(None) is None
    assert values.window_of(None) is None
    assert values.strs_of(None) == ()
    assert values.ints_of(None) == ()


def test_the_usual_shapes_are_read_without_parsing() -> None:
    """An int, a short string and an int array are decoded from the bytes themselves."""
    assert values.int_field(_encoded(110_000)) == 110_000
    assert values.int_field(_encoded(-1)) is None  # ten varint bytes: parsed instead
    assert values.int_field(_encoded("7")) is None
    assert values.ints_of(_encoded([2_000, 30, -4])) == (2_000, 30)


def test_shared_values_are_one_object_per_encoding() -> None:
    """Tool-name lists and model names decode once and are shared (idle state keeps them)."""
    raw = _encoded(["read_file", "bash"])
    assert values.strs_of(raw) is values.strs_of(bytes(raw))
    model = _encoded("claude-sonnet-4-5")
    assert values.word_of(model) is values.word_of(bytes(model))
