"""Message facts: the one-walk reader of block messages agrees with the general reader, and
sizes and keys agree with the digest."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from otel_compaction.inference import messages
from otel_compaction.inference.messages import _describe_any, describe, size_of, value_digest

_text = st.text(max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "compaction", "image"])},
    optional={
        "text": _text,
        "content": st.none() | _text | st.lists(st.fixed_dictionaries({"text": _text})),
        "output": st.none() | _text,
        "input": _json,
        "id": _text,
        "encrypted_content": st.none() | _text,
    },
)
_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "compaction", "system"]),
        "content": st.lists(_block, max_size=4),
    },
    optional={"name": _text, "type": _text, "id": _text, "cache": _json},
)


@given(_message)
@example({"role": "compaction", "id": "X", "content": [{"type": "compaction", "content": "Y"}]})
def test_block_messages_read_as_the_general_reader_reads_them(message: dict[str, Any]) -> None:
    """Key, role, sizes, tool results and summary are the same by either path."""
    assert describe(message) == _describe_any(message)


def _nested(depth: int) -> Any:
    value: Any = "leaf text"
    for level in range(depth):
        value = {"k": value, "n": level, "s": "x" * level} if level % 2 else [value, "y"]
    return value


@given(_json)
@example(_nested(20))  # deeper than the walk goes: both stop at the same depth
def test_size_of_counts_what_the_digest_counts(value: Any) -> None:
    """``size_of`` is the digest's character count, by its own hash-free walk."""
    assert size_of(value) == value_digest(value)[1]
    assert (
        size_of({"role": "user", "content": [value]})
        == value_digest({"role": "user", "content": [value]})[1]
    )


@given(_message)
def test_the_key_is_the_digest_of_the_message(message: dict[str, Any]) -> None:
    """A message's key, computed when first asked for, is its digest; two equal
    messages have equal keys and the facts compare equal whether keys were computed or not."""
    asked: list[Any] = []

    def counted(value: Any, depth: int = 0) -> tuple[int, int]:
        asked.append(value)
        return value_digest(value, depth)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(messages, "value_digest", counted)
        facts = describe(message)
        assert not any(value is message for value in asked)  # describing computes no key
        assert facts.key == value_digest(message)[0]
        assert any(value is message for value in asked)
    again = describe({**message})
    assert again == facts
    assert again.key == facts.key


def test_other_shapes_take_the_general_reader() -> None:
    """Text content, non-dict blocks and non-dict messages are still described."""
    text = {"role": "user", "content": "hello"}
    assert describe(text) == _describe_any(text)
    mixed = {"role": "user", "content": ["plain string", {"type": "text", "text": "x"}]}
    assert describe(mixed) == _describe_any(mixed)
    assert describe("a bare string").chars == len("a bare string")


def test_tool_result_sizes_and_summaries() -> None:
    """A tool result counts its content (or its output when content is empty); the last
    compaction block's text is the summary."""
    message = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 10},
            {"type": "tool_result", "tool_use_id": "t2", "content": "", "output": "y" * 4},
            {"type": "compaction", "content": "first"},
            {"type": "compaction", "content": "second"},
        ],
    }
    facts = describe(message)
    assert facts.tool_results == (10, 4)
    assert facts.summary == "second"
    assert facts == _describe_any(message)


def test_sdk_blocks_read_as_their_dicts() -> None:
    """An assistant message holding the response's own SDK blocks (as the providers'
    examples append it) has the facts of the same message with the blocks as dicts."""
    from anthropic.types import TextBlock, ToolUseBlock

    blocks = [
        TextBlock(type="text", text="I will look."),
        ToolUseBlock(type="tool_use", id="toolu_1", name="grep", input={"pattern": "def f"}),
    ]
    message = {"role": "assistant", "content": blocks}
    dumped = {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in blocks]}
    assert describe(message) == _describe_any(message) == describe(dumped)
    assert describe(message).key == describe(dumped).key
