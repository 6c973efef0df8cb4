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


# Every name the response readers take through ``fields_of``, on the classes that carry it.
_READ_FIELDS = {
    "message": ["id", "model", "stop_reason", "usage", "content", "context_management"],
    "usage": [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
        "output_tokens_details",
    ],
    "block": ["type", "name", "input", "text", "content"],
}


def _sdk_objects() -> dict[str, list[Any]]:
    from anthropic.types import ToolUseBlock

    message = _message(server_extension={"a": 1})
    tool = ToolUseBlock(type="tool_use", id="toolu_1", name="grep", input={"pattern": "x"})
    beta: list[Any] = []
    try:
        from anthropic.types.beta import BetaMessage
    except ImportError:  # the oldest supported releases have no beta types
        pass
    else:
        beta.append(BetaMessage.construct(**{**message.__dict__, "context_management": None}))
    return {
        "message": [message, *beta, message.model_dump()],
        "usage": [message.usage, Usage(input_tokens=1, output_tokens=2, cache_read_input_tokens=5)],
        "block": [TextBlock(type="text", text="hi"), tool, {"type": "text", "text": "x"}],
    }


@pytest.mark.parametrize("kind", sorted(_READ_FIELDS))
def test_fields_of_answers_what_field_of_answers(kind: str) -> None:
    """The one-dict reader agrees with ``field_of`` for every field the readers take, on
    the SDK's models, their extras and their dict forms."""
    from otel_compaction.instrument._api import fields_of

    for value in _sdk_objects()[kind]:
        read = fields_of(value)
        for name in [*_READ_FIELDS[kind], "server_extension", "nope"]:
            assert read(name) == field_of(value, name), (type(value).__name__, name)
    assert fields_of(None)("id") is None
