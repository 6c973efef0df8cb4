"""Reading SDK objects field by field (``_api.field_of``) on the real SDK classes."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message, TextBlock, Usage

from otel_compaction.instrument._api import field_of


def _message(**extra: Any) -> Message:
    return Message.construct(
        id="msg_1",
        type="message",
        role="assistant",
        content=[TextBlock(type="text", text="hi")],
        model="claude-sonnet-4-6",
        stop_reason="end_turn",
        stop_sequence=None,
        usage=Usage(input_tokens=3, output_tokens=4),
        **extra,
    )


@pytest.mark.parametrize(
    "name",
    [
        "id",  # a field
        "usage",  # a nested model
        "stop_sequence",  # a field set to None
        "context_management",  # a field of the beta class only: absent here
        "server_extension",  # an extra the API added (kept by the SDK's extra="allow")
        "model_dump",  # a method: getattr resolves it
        "model_fields_set",  # a property
        "_private",  # never read through the instance dict
        "nope",
    ],
)
def test_field_of_reads_a_model_as_getattr_does(name: str) -> None:
    """The fast path for pydantic models answers what ``getattr(value, name, None)`` does."""
    message = _message(server_extension={"a": 1})
    expected = getattr(message, name, None)
    got = field_of(message, name)
    if callable(expected):
        assert callable(got)
    else:
        assert got == expected


def test_field_of_reads_mappings_and_plain_objects() -> None:
    """Dicts (and other mappings) by key, anything else by attribute, None for None."""

    class Plain:
        x = 1

    assert field_of({"x": 2}, "x") == 2
    assert field_of({"x": 2}, "y") is None
    assert field_of(Plain(), "x") == 1
    assert field_of(Plain(), "y") is None
    assert field_of(None, "x") is None
