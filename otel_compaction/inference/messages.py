"""Facts about one chat message: a structural digest, sizes, tool results, summaries.

One reader serves all three wire shapes we instrument: Anthropic message params
(``role`` + ``content`` blocks, ``tool_result`` and ``compaction`` blocks), OpenAI
Chat Completions messages (``role: tool`` results) and OpenAI Responses input
items (``function_call_output``, ``compaction`` items). Response objects that an
agent appends as they are (pydantic models) are read through ``model_dump``.

The digest is Python's ``hash`` of a canonical form: cheap (string hashes
are cached on the string), order-independent for mappings, blind to ``None``
fields, and per process only, which is all conversation inference needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_TOOL_RESULT_TYPES = frozenset({"tool_result", "function_call_output", "tool"})
_SUMMARY_TYPES = frozenset({"compaction"})
_USER_ROLES = frozenset({"user", "tool", "function", "function_call_output", "tool_result"})
_MAX_DEPTH = 12
_SCALARS = (bool, int, float)
_SEQUENCES = (list, tuple)
"""Type tuples for isinstance: a ``list | tuple`` union would be built anew on every call."""
_ONLY_STR = frozenset({str})


@dataclass(slots=True)
class MessageFacts:
    """What conversation and compaction inference need to know of one message.

    Never changed once built (not frozen: two are built on every LLM call, and a frozen
    dataclass costs nearly three times as much to build).

    Args:
        role: ``user``, ``assistant``, ``system``, ``tool``... or the item type.
        chars: characters of text in the message (the size estimate).
        content_chars: characters of task content the user side brought in
            (user text and tool results; 0 for assistant messages).
        tool_results: characters of each tool result in the message.
        summary: the text of a compaction block or item in the message (an
            OpenAI item's opaque id or encrypted content stands in for it).
        message: the message itself, for :attr:`key`.
    """

    role: str
    chars: int
    content_chars: int
    tool_results: tuple[int, ...] = ()
    summary: str | None = None
    message: Any = field(default=None, compare=False, repr=False)
    _key: int | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> int:
        """Structural digest of the message (role and content): ``value_digest(message)``.

        Computed when first asked for, not when the message is described: a call that
        continues its history never needs the keys of its new messages (only a rewrite, a
        branch or a lookup by tail does), and digesting is most of what describing
        costs. A message changed in place before its key is asked for gets the key of
        what it holds then.
        """
        key = self._key
        if key is None:
            key = self._key = value_digest(self.message)[0]
        return key

    @property
    def is_assistant(self) -> bool:
        """Whether the model wrote this message (one assistant message = one turn)."""
        return self.role in ("assistant", "model", "function_call", "reasoning")


def plain(value: Any) -> Any:
    """``value`` with pydantic models turned into dicts (``None`` fields dropped)."""
    if type(value) is dict:  # the common case, without the attribute lookup
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None and not isinstance(value, Mapping):
        try:
            # warnings=False: a loosely typed SDK object must not warn in the host's process.
            return dump(exclude_none=True, warnings=False)
        except Exception:  # noqa: BLE001 - any foreign object: fall back to its repr
            return repr(value)
    return value


def value_digest(value: Any, depth: int = 0) -> tuple[int, int]:
    """``(hash, characters)`` of a JSON-like value, pydantic models included."""
    kind = type(value)
    if kind is str:
        return hash(value), len(value)
    if depth <= _MAX_DEPTH:
        # Exact built-in containers skip the generic dispatch below (same result, per call
        # on the two new messages of every request).
        if kind is dict:
            return _mapping(value, depth)
        if kind is list or kind is tuple:
            return _sequence(value, depth)
    return _value_digest_any(value, depth)


def _value_digest_any(value: Any, depth: int) -> tuple[int, int]:
    if isinstance(value, str):
        return hash(value), len(value)
    if value is None or isinstance(value, _SCALARS):
        return hash(value), 0
    if depth > _MAX_DEPTH:
        return hash(repr(value)), 0
    value = plain(value)
    if isinstance(value, str):
        return hash(value), len(value)
    if isinstance(value, Mapping):
        return _mapping(value, depth)
    if isinstance(value, _SEQUENCES):
        return _sequence(value, depth)
    return hash(repr(value)), 0


def _mapping(value: Mapping[Any, Any], depth: int) -> tuple[int, int]:
    """Order-independent: the frozenset of ``(key, digest)`` of the non-None items (a
    string item is its own digest, so a block of strings is ``frozenset(block.items())``)."""
    if set(map(type, value.values())) == _ONLY_STR:
        return hash(frozenset(value.items())), sum(map(len, value.values()))  # all in C
    items: list[tuple[Any, str | int]] = []
    chars = 0
    depth += 1
    for key, item in value.items():
        if item is None:
            continue
        if type(item) is str:
            items.append((key, item))  # the string itself: its hash is cached on it
            chars += len(item)
            continue
        digest, size = _item(item, depth)
        items.append((key, digest))
        chars += size
    return hash(frozenset(items)), chars


def _sequence(value: Sequence[Any], depth: int) -> tuple[int, int]:
    digests = []
    chars = 0
    depth += 1
    for item in value:
        if type(item) is str:
            digests.append(hash(item))
            chars += len(item)
            continue
        digest, size = _item(item, depth)
        digests.append(digest)
        chars += size
    return hash(tuple(digests)), chars


def _item(item: Any, depth: int) -> tuple[int, int]:
    """:func:`value_digest` of a member (not a str) at ``depth``, common kinds first."""
    kind = type(item)
    if depth <= _MAX_DEPTH:
        if kind is dict:
            return _mapping(item, depth)
        if kind is list:
            return _sequence(item, depth)
    if kind is int or kind is float or kind is bool:
        return hash(item), 0
    return value_digest(item, depth)


def size_of(value: Any, depth: int = 0) -> int:
    """``value_digest(value)[1]``, the characters of text in a JSON-like value, without the
    hashing (the same walk: the same members counted at the same depths)."""
    kind = type(value)
    if kind is str:
        return len(value)
    if depth <= _MAX_DEPTH:
        if kind is dict:
            return _mapping_size(value, depth)
        if kind is list or kind is tuple:
            return _sequence_size(value, depth)
    if isinstance(value, str):
        return len(value)
    if value is None or isinstance(value, _SCALARS) or depth > _MAX_DEPTH:
        return 0
    value = plain(value)
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return _mapping_size(value, depth)
    if isinstance(value, _SEQUENCES):
        return _sequence_size(value, depth)
    return 0


def _mapping_size(value: Mapping[Any, Any], depth: int) -> int:
    values = value.values()
    if set(map(type, values)) == _ONLY_STR:
        return sum(map(len, values))
    chars = 0
    depth += 1
    for item in values:
        if type(item) is str:
            chars += len(item)
        elif item is not None:
            chars += _item_size(item, depth)
    return chars


def _sequence_size(value: Sequence[Any], depth: int) -> int:
    chars = 0
    depth += 1
    for item in value:
        chars += len(item) if type(item) is str else _item_size(item, depth)
    return chars


def _item_size(item: Any, depth: int) -> int:
    """:func:`size_of` of a member (not a str) at ``depth``, as :func:`_item` walks it."""
    kind = type(item)
    if depth <= _MAX_DEPTH:
        if kind is dict:
            return _mapping_size(item, depth)
        if kind is list:
            return _sequence_size(item, depth)
    if kind is int or kind is float or kind is bool:
        return 0
    return size_of(item, depth)


def lead(message: Any) -> int:
    """A cheap mark of a message's content, equal for messages with equal digests: the
    hash of its ``content`` when that is text, else of its first block's ``text`` or
    ``content`` text; 0 when there is none. Read from named fields (never in dict order) and
    through ``plain``, as :func:`value_digest` reads SDK objects."""
    message = plain(message)
    if not isinstance(message, Mapping):
        return 0
    content = message.get("content")
    if isinstance(content, str):
        return hash(content)
    if not isinstance(content, _SEQUENCES) or not content:
        return 0
    first = content[0]
    if isinstance(first, str):
        return hash(first)
    first = plain(first)
    if not isinstance(first, Mapping):
        return 0
    for name in ("text", "content"):
        value = first.get(name)
        if isinstance(value, str):
            return hash((name, value))
    return 0


def text_of(value: Any, depth: int = 0) -> str:
    """The text in a message, block or item, joined by newlines (for lineage matching)."""
    if isinstance(value, str):
        return value
    if value is None or depth > _MAX_DEPTH:
        return ""
    value = plain(value)
    if isinstance(value, Mapping):
        parts = [
            text_of(value[name], depth + 1)
            for name in ("content", "text", "output", "input", "arguments", "thinking")
            if name in value
        ]
        return "\n".join(p for p in parts if p)
    if isinstance(value, _SEQUENCES):
        return "\n".join(t for t in (text_of(v, depth + 1) for v in value) if t)
    return ""


def _role(message: Mapping[str, Any]) -> str:
    role = message.get("role") or message.get("type") or "unknown"
    return str(role)


def _parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, _SEQUENCES):
        return [plain(part) for part in content]
    return []


def _summary_of(part: Mapping[str, Any]) -> str | None:
    """A compaction's text; an opaque OpenAI item is known by its encrypted content or id."""
    for name in ("content", "encrypted_content", "id"):
        value = part.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def describe(message: Any) -> MessageFacts:
    """The facts of one message, block list or Responses item."""
    if type(message) is dict:
        content = message.get("content")
        if type(content) is list:
            facts = _describe_blocks(message, content)
            if facts is not None:
                return facts
    return _describe_any(message)


def _describe_blocks(message: dict[str, Any], content: list[Any]) -> MessageFacts | None:
    """:func:`_describe_any` of a plain message whose content is a list of blocks (dicts or
    SDK models), in one walk (the common shape, two of them new on every call); None for
    any other shape.

    The sizes are the ones :func:`size_of` and :func:`_describe_any` give: the same members
    counted at the same depths.
    """
    chars = 0
    tool_results: list[int] = []
    summary: str | None = None
    for part in content:
        if type(part) is not dict:
            # An SDK block (the response's own content appended as it is, as the
            # providers' examples do): read through model_dump, as the general reader
            # would read it.
            part = plain(part)
            if type(part) is not dict:
                return None
        values = part.values()
        if set(map(type, values)) == _ONLY_STR:
            # A block of strings (text, a tool result's text): its size in C.
            chars += sum(map(len, values))
            kind = part.get("type")
            if kind in _TOOL_RESULT_TYPES:
                tool_results.append(len(part.get("content") or part.get("output") or ""))
            elif kind in _SUMMARY_TYPES:
                summary = _summary_of(part) or summary
            continue
        size = content_size = output_size = 0
        for name, item in part.items():
            if item is None:
                continue
            # message 0, content list 1, block 2, its items 3
            n = len(item) if type(item) is str else _item_size(item, 3)
            size += n
            if name == "content":
                content_size = n
            elif name == "output":
                output_size = n
        chars += size
        kind = part.get("type")
        if kind in _TOOL_RESULT_TYPES:
            tool_results.append(content_size if part.get("content") else output_size)
        elif kind in _SUMMARY_TYPES:
            summary = _summary_of(part) or summary
    for name, item in message.items():
        if item is None or name == "content":
            continue
        chars += len(item) if type(item) is str else _item_size(item, 1)
    role = _role(message)
    if role in _TOOL_RESULT_TYPES:
        tool_results.insert(0, chars)
    if role in _SUMMARY_TYPES:
        summary = summary or _summary_of(message)
    content_chars = chars if role in _USER_ROLES else 0
    return MessageFacts(role, chars, content_chars, tuple(tool_results), summary, message)


def _describe_any(message: Any) -> MessageFacts:
    """The facts of any message, item or model object (the general reader)."""
    chars = size_of(message)
    described = message
    message = plain(message)
    if not isinstance(message, Mapping):
        return MessageFacts("unknown", chars, chars, message=described)
    role = _role(message)
    tool_results: list[int] = []
    summary: str | None = None
    if role in _TOOL_RESULT_TYPES:
        tool_results.append(chars)
    if role in _SUMMARY_TYPES:
        summary = _summary_of(message)
    for part in _parts(message):
        if type(part) is not dict and not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in _TOOL_RESULT_TYPES:
            tool_results.append(size_of(part.get("content") or part.get("output")))
        elif kind in _SUMMARY_TYPES:
            summary = _summary_of(part) or summary
    content_chars = chars if role in _USER_ROLES else 0
    return MessageFacts(role, chars, content_chars, tuple(tool_results), summary, described)


def ends(facts: Sequence[MessageFacts], count: int, start: int = 0) -> Sequence[MessageFacts]:
    """``facts[start:]`` when it has at most ``2 * count`` messages, else its first and last
    ``count``: the bounded part of a history the placement steps read where a long one
    would cost them in proportion to its length."""
    if len(facts) - start <= 2 * count:
        return facts[start:]
    return [*facts[start : start + count], *facts[-count:]]
