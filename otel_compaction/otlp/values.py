"""Attribute values, from the wire to what the engine takes: decoded, coerced, shared.

Two kinds of reader:

* ``*_of(raw)`` read the span view's values (:mod:`~otel_compaction.otlp.spanview`),
  each the bytes of an OTLP ``AnyValue`` (None when the key is absent). The
  shapes an instrumentation writes (one ``int_value``, one short
  ``string_value``, an array of ints) are read straight from the bytes; any
  other bytes (another type, a negative int, a long string, a value encoded
  with two fields, where the last one wins) are parsed as an ``AnyValue`` and
  read the lenient way below, so a reader gives what it would give on the
  parsed message, whatever the bytes. Low-cardinality values (model and
  provider names, tool-name lists, context windows) are decoded once per
  distinct encoding and shared (bounded LRU tables, ``_bounded``), which is
  also what lets idle state keep one copy of each.
* the lenient coercions (``as_str``, ``as_word``, ...; counts by ``_count.as_count``) take
  plain Python values.
  Attributes arrive typed by whoever sent them: Claude Code sends numbers as
  strings, some SDKs send ints as doubles. Coerce leniently, never raise.

The bytes come from a request a real parse has accepted, so they are well formed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from otel_compaction._bounded import BoundedMap
from otel_compaction._count import as_count

AttrValue = str | bool | int | float | bytes | list[Any] | None

_STRING = 0x0A  # AnyValue.string_value: field 1, length-delimited
_INT = 0x18  # AnyValue.int_value: field 3, varint
_ARRAY = 0x2A  # AnyValue.array_value: field 5, length-delimited
_ELEMENT = 0x0A  # ArrayValue.values: field 1, length-delimited
_SHARED_MAX = 1024  # entries of each table of shared values
_SHARED_KEY_MAX = 512  # bytes: longer encodings are decoded every time
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The range of an OTLP ``int_value``."""


def any_value(value: Any) -> AttrValue:
    """A Python value from an OTLP ``AnyValue`` (arrays as lists, kvlists skipped)."""
    kind = value.WhichOneof("value")
    if kind is None or kind == "kvlist_value":
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    result: AttrValue = getattr(value, kind)
    return result


def decoded(attrs: Mapping[str, bytes], keys: tuple[str, ...]) -> dict[str, AttrValue]:
    """The values among ``keys`` as plain Python values (for the rarer spans)."""
    return {key: plain(raw) for key in keys if (raw := attrs.get(key)) is not None}


def plain(raw: bytes) -> AttrValue:
    """``any_value`` of the ``AnyValue`` encoded in ``raw``."""
    n = len(raw)
    if n >= 2:
        tag = raw[0]
        if tag == _INT:
            number = int_field(raw)
            if number is not None:
                return number
        elif tag == _STRING and raw[1] == n - 2 and n - 2 < 0x80:
            return raw[2:].decode()
    return any_value(AnyValue.FromString(raw))


# ------------------------------------------------------------ encoded values


def int_field(raw: bytes) -> int | None:
    """The value of ``raw`` when it is exactly one non-negative ``int_value``, else None."""
    n = len(raw)
    if n < 2 or raw[0] != _INT:
        return None
    # Unrolled for the usual sizes (below 2**21: turn indexes, token counts).
    if n == 2:
        a = raw[1]
        return a if a < 0x80 else None
    if n == 3:
        a, b = raw[1], raw[2]
        return (a & 0x7F) | (b << 7) if a >= 0x80 and b < 0x80 else None
    if n == 4:
        a, b, c = raw[1], raw[2], raw[3]
        if a >= 0x80 and b >= 0x80 and c < 0x80:
            return (a & 0x7F) | ((b & 0x7F) << 7) | (c << 14)
        return None
    if n > 10:
        return None  # ten varint bytes: a negative int64
    number = 0
    last = n - 2
    for shift, byte in enumerate(raw[1:]):
        number |= (byte & 0x7F) << (7 * shift)
        if byte < 0x80:
            return number if shift == last else None  # the varint must end the value
    return None


def int_of(raw: bytes | None) -> int | None:
    """An int attribute (lenient: a numeric string or a whole double counts too)."""
    if raw is None:
        return None
    number = int_field(raw)
    if number is not None:
        return number
    value = AnyValue.FromString(raw)
    number = value.int_value
    return number if number else as_count(any_value(value))


def str_of(raw: bytes | None) -> str | None:
    """A string attribute; an empty string, another type or no value is None."""
    if not raw:
        return None
    if raw[0] == _STRING:
        size = raw[1]
        if size == len(raw) - 2 and size < 0x80:  # one string_value under 128 bytes
            return raw[2:].decode() or None
    return AnyValue.FromString(raw).string_value or None


def _shared(table: BoundedMap[bytes, Any], raw: bytes, read: Callable[[bytes], Any]) -> Any:
    """``read(raw)``, decoded once per distinct encoding and shared (a bounded table)."""
    if len(raw) > _SHARED_KEY_MAX:
        return read(raw)
    return table.cached(raw, read)


def _read_word(raw: bytes) -> str | None:
    return as_word(str_of(raw))


def _read_window(raw: bytes) -> int | None:
    return as_window(int_of(raw))


_words: BoundedMap[bytes, str | None] = BoundedMap(_SHARED_MAX)


def word_of(raw: bytes | None) -> str | None:
    """A low-cardinality string attribute (model, provider): one shared copy (``as_word``)."""
    word: str | None = None if raw is None else _shared(_words, raw, _read_word)
    return word


_windows_by_raw: BoundedMap[bytes, int | None] = BoundedMap(_SHARED_MAX)


def window_of(raw: bytes | None) -> int | None:
    """A context window attribute: few distinct values, one shared int each (``as_window``)."""
    window: int | None = None if raw is None else _shared(_windows_by_raw, raw, _read_window)
    return window


_string_lists: BoundedMap[bytes, tuple[str, ...]] = BoundedMap(_SHARED_MAX)


def strs_of(raw: bytes | None) -> tuple[str, ...]:
    """Tool names or categories (strings of up to 64 characters): one shared tuple per list."""
    if raw is None:
        return ()
    shared: tuple[str, ...] = _shared(_string_lists, raw, _read_strs)
    return shared


def _read_strs(raw: bytes) -> tuple[str, ...]:
    # ``array_value`` of a value of another type reads as an empty array.
    values = AnyValue.FromString(raw).array_value.values
    return tuple([sys.intern(t) for v in values if (t := v.string_value) and len(t) <= 64])


def ints_of(raw: bytes | None) -> tuple[int, ...]:
    """Non-negative ints of an array attribute (tool output sizes), lenient per element."""
    if raw is None:
        return ()
    elements = _array_elements(raw)
    if elements is None:
        elements = [v.SerializeToString() for v in AnyValue.FromString(raw).array_value.values]
    out = []
    for element in elements:
        number = int_of(element)
        if number is not None and number >= 0:
            out.append(number)
    return tuple(out)


def _array_elements(raw: bytes) -> list[bytes] | None:
    """The element ``AnyValue`` bytes when ``raw`` is exactly one short ``array_value``."""
    n = len(raw)
    if n < 2 or raw[0] != _ARRAY or raw[1] != n - 2 or n - 2 >= 0x80:
        return None
    out = []
    at = 2
    while at < n:
        if raw[at] != _ELEMENT or at + 1 >= n:
            return None
        start = at + 2
        at = start + raw[at + 1]  # under 128: the array's own length is
        if at > n:
            return None
        out.append(raw[start:at])
    return out


# ------------------------------------------------------------ lenient coercion


def as_str(value: AttrValue) -> str | None:
    """A non-empty string, else None."""
    if isinstance(value, str) and value:
        return value
    return None


def as_word(value: AttrValue) -> str | None:
    """A low-cardinality string (model, trigger): one shared copy, as idle state keeps it."""
    text = as_str(value)
    return sys.intern(text) if text is not None and len(text) <= 64 else text


_windows: BoundedMap[int, int] = BoundedMap(_SHARED_MAX)


def as_window(window: int | None) -> int | None:
    """A context window: few distinct values, so one shared int each (idle state keeps it)."""
    if window is None:
        return None
    return _windows.cached(window, _itself)


def _itself(window: int) -> int:
    return window


def is_number(value: Any) -> bool:
    """An int or float that is not a bool and not NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def as_ints(value: AttrValue) -> tuple[int, ...]:
    """The non-negative ints of a list."""
    if not isinstance(value, list):
        return ()
    return tuple(i for i in map(as_count, value) if i is not None)


def as_strs(value: AttrValue) -> tuple[str, ...]:
    """The strings of up to 64 characters of a list, interned."""
    if not isinstance(value, list):
        return ()
    return tuple(sys.intern(v) for v in value if isinstance(v, str) and v and len(v) <= 64)


def as_enum(cls: type[Any], value: AttrValue, default: Any) -> Any:
    """``cls(value)``, or ``default`` when ``value`` is not one of its values."""
    try:
        return cls(value)
    except (ValueError, TypeError):
        return default
