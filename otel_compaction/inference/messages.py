"""Facts about one chat message: a structural fingerprint, sizes, tool results, summaries.

One reader serves all three wire shapes we instrument: Anthropic message params
(``role`` + ``content`` blocks, ``tool_result`` and ``compaction`` blocks), OpenAI
Chat Completions messages (``role: tool`` results) and OpenAI Responses input
items (``function_call_output``, ``compaction`` items). Response objects that an
agent appends as they are (pydantic models) are read through ``model_dump``.

The fingerprint is Python's ``hash`` of a canonical form: cheap (string hashes
are cached on the string), order-independent for mappings, blind to ``None``
fields, and per process only, which is all conversation inference needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOOL_RESULT_TYPES = frozenset({"tool_result", "function_call_output", "tool"})
_SUMMARY_TYPES = frozenset({"compaction"})
_USER_ROLES = frozenset({"user", "tool", "function", "function_call_output", "tool_result"})
_MAX_DEPTH = 12


@dataclass(frozen=True, slots=True)
class MessageFacts:
    """What conversation and compaction inference need to know of one message.

    Args:
        role: ``user``, ``assistant``, ``system``, ``tool``... or the item type.
        chars: characters of text in the message (the size estimate).
        content_chars: characters of task content the user side brought in
            (user text and tool results; 0 for assistant messages).
        tool_results: characters of each tool result in the message.
        summary: the text of a compaction block or item in the message (an
            OpenAI item's opaque id or encrypted content stands in for it).
        key: structural fingerprint of the message (role and content).
    """

    role: str
    chars: int
    content_chars: int
    tool_results: tuple[int, ...] = ()
    summary: str | None = None
    key: int = 0

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


def fingerprint(value: Any, depth: int = 0) -> tuple[int, int]:
    """``(hash, characters)`` of a JSON-like value, pydantic models included.

    Mappings are order-independent (the frozenset of ``(key, digest)`` of the non-None
    items)."""
    if isinstance(value, str):
        return hash(value), len(value)
    if value is None or isinstance(value, bool | int | float):
        return hash(value), 0
    if depth > _MAX_DEPTH:
        return hash(repr(value)), 0
    value = plain(value)
    if isinstance(value, str):
        return hash(value), len(value)
    chars = 0
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if item is not None:
                digest, size = fingerprint(item, depth + 1)
                items.append((key, digest))
                chars += size
        return hash(frozenset(items)), chars
    if isinstance(value, list | tuple):
        digests = []
        for item in value:
            digest, size = fingerprint(item, depth + 1)
            digests.append(digest)
            chars += size
        return hash(tuple(digests)), chars
    return hash(repr(value)), 0


def size_of(value: Any) -> int:
    """The characters of text in a JSON-like value: ``fingerprint(value)[1]``."""
    return fingerprint(value)[1]


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
    if isinstance(value, list | tuple):
        return "\n".join(t for t in (text_of(v, depth + 1) for v in value) if t)
    return ""


def _role(message: Mapping[str, Any]) -> str:
    role = message.get("role") or message.get("type") or "unknown"
    return str(role)


def _parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, list | tuple):
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
    key, chars = fingerprint(message)
    message = plain(message)
    if not isinstance(message, Mapping):
        return MessageFacts("unknown", chars, chars, key=key)
    role = _role(message)
    tool_results: list[int] = []
    summary: str | None = None
    if role in _TOOL_RESULT_TYPES:
        tool_results.append(chars)
    if role in _SUMMARY_TYPES:
        summary = _summary_of(message)
    for part in _parts(message):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in _TOOL_RESULT_TYPES:
            tool_results.append(size_of(part.get("content") or part.get("output")))
        elif kind in _SUMMARY_TYPES:
            summary = _summary_of(part) or summary
    content_chars = chars if role in _USER_ROLES else 0
    return MessageFacts(role, chars, content_chars, tuple(tool_results), summary, key)
