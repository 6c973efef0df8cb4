"""Message facts: sizes count the text, keys are the fingerprint, equal messages have equal
facts whatever their key order or block objects."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from otel_compaction.inference.messages import describe, fingerprint, size_of

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


def _text_chars(value: Any) -> int:
    """Characters of the strings among a JSON value's values (not its keys)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_text_chars(v) for v in value.values())
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    return 0


def _reversed(value: Any) -> Any:
    """``value`` with every mapping's keys in the reverse order."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(value)}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


@given(_json)
def test_size_counts_the_text_of_the_values(value: Any) -> None:
    """``size_of`` (the fingerprint's count) is the characters of the string values."""
    assert size_of(value) == fingerprint(value)[1] == _text_chars(value)


def test_the_walk_stops_at_its_depth() -> None:
    """A value nested deeper than the walk goes is counted down to that depth only."""
    value: Any = "x" * 1000
    for _ in range(20):
        value = [value]
    assert size_of(value) == 0


@given(_message)
def test_facts_are_blind_to_key_order(message: dict[str, Any]) -> None:
    """A message's key is its fingerprint; the same message with its keys in another order
    has the same facts and key."""
    facts = describe(message)
    assert facts.key == fingerprint(message)[0]
    assert facts.chars == _text_chars(message)
    again = describe(_reversed(message))
    assert again == facts
    assert again.key == facts.key


def test_other_shapes_are_described() -> None:
    """Text content, non-dict blocks and non-dict messages are still described."""
    text = describe({"role": "user", "content": "hello"})
    assert (text.role, text.chars, text.content_chars) == ("user", 9, 9)
    mixed = describe({"role": "user", "content": ["plain string", {"type": "text", "text": "x"}]})
    assert (mixed.chars, mixed.tool_results) == (4 + 12 + 4 + 1, ())
    bare = describe("a bare string")
    assert (bare.role, bare.chars) == ("unknown", len("a bare string"))


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
    assert describe(message) == describe(dumped)
    assert describe(message).key == describe(dumped).key
