"""Typed reads of span attributes: each checks the value's type, so a test both narrows the
OpenTelemetry ``AttributeValue`` union and fails on a value of the wrong kind."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.trace import ReadableSpan

Attributed = ReadableSpan | Mapping[str, object] | None
"""A finished span, or its attributes (``None`` when it has none)."""


def _value(source: Attributed, name: str) -> object:
    attributes = source.attributes if isinstance(source, ReadableSpan) else source
    assert attributes is not None, "no attributes"
    assert name in attributes, f"no attribute {name}"
    return attributes[name]


def attr_int(source: Attributed, name: str) -> int:
    """The integer attribute ``name`` (a bool is not one)."""
    value = _value(source, name)
    assert type(value) is int, f"{name} = {value!r} is not an int"
    return value


def attr_float(source: Attributed, name: str) -> float:
    """The number attribute ``name``, as a float (ints too; a bool is not one)."""
    value = _value(source, name)
    assert type(value) in (int, float), f"{name} = {value!r} is not a number"
    assert isinstance(value, int | float)
    return float(value)


def attr_str(source: Attributed, name: str) -> str:
    """The string attribute ``name``."""
    value = _value(source, name)
    assert isinstance(value, str), f"{name} = {value!r} is not a string"
    return value
