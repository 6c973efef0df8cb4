"""What the handler remembers of each conversation between LangChain runs.

The analysis state (turns, lineage, detectors) lives in the shared
``ConversationRegistry``; this is only what is needed to read LangChain's
histories: which messages were already seen (new content per turn), which tool
results were already counted as cleared, how big tool results were before they
were cleared, langmem's last running summary, and the calibration of our token
estimate against the provider's usage. Every collection is bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

SEEN_MEMORY = 4096
"""Message keys remembered per conversation (older ones count as new again)."""
TEXT_MEMORY = 8
"""Summarizer inputs kept per conversation until the compaction they feed."""
SCALE_BOUNDS = (0.25, 4.0)
"""The calibration factor is clamped here: a wild usage figure must not distort sizes."""


class BoundedSet:
    """An insertion-ordered set that forgets its oldest keys past ``limit``."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit: int = SEEN_MEMORY) -> None:
        self._items: OrderedDict[str, int] = OrderedDict()
        self._limit = limit

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def add(self, key: str, value: int = 0) -> None:
        """Remember ``key`` (with an optional integer, e.g. a size)."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._limit:
            self._items.popitem(last=False)

    def get(self, key: str) -> int | None:
        """The integer stored with ``key``, None if it is not remembered."""
        return self._items.get(key)


@dataclass(slots=True)
class ConversationState:
    """LangChain-side memory of one conversation (see the module docstring)."""

    seen: BoundedSet = field(default_factory=BoundedSet)
    sizes: BoundedSet = field(default_factory=BoundedSet)
    cleared: BoundedSet = field(default_factory=BoundedSet)
    tool_tokens: BoundedSet = field(default_factory=BoundedSet)
    handled_summaries: BoundedSet = field(default_factory=lambda: BoundedSet(64))
    summarizer_texts: list[str] = field(default_factory=list)
    running_summary: tuple[int, str | None, int] | None = None
    requested_tool_ids: set[str] = field(default_factory=set)
    extra_tools: list[str] = field(default_factory=list)
    scale: float = 1.0

    def add_summarizer_text(self, text: str) -> None:
        """Keep a summarizer input until the compaction it feeds is recorded."""
        if text and (not self.summarizer_texts or self.summarizer_texts[-1] != text):
            self.summarizer_texts.append(text)
            del self.summarizer_texts[:-TEXT_MEMORY]

    def take_summarizer_texts(self) -> list[str]:
        """The summarizer inputs seen since the last compaction, then forget them."""
        texts, self.summarizer_texts = self.summarizer_texts, []
        return texts

    def calibrate(self, reported: int, estimated: int) -> None:
        """Learn how the provider's token count relates to our estimate."""
        if reported > 0 and estimated > 0:
            low, high = SCALE_BOUNDS
            self.scale = min(high, max(low, reported / estimated))

    def scaled(self, estimated: int) -> int:
        """An estimate brought to the provider's scale."""
        return round(estimated * self.scale)


class ConversationStates:
    """Per-conversation ``ConversationState``, least recently used evicted past ``limit``."""

    __slots__ = ("_limit", "_states")

    def __init__(self, limit: int) -> None:
        self._states: OrderedDict[str, ConversationState] = OrderedDict()
        self._limit = max(1, limit)

    def get(self, conversation_id: str) -> ConversationState:
        """The conversation's state, created on first use."""
        state = self._states.get(conversation_id)
        if state is None:
            state = self._states[conversation_id] = ConversationState()
            while len(self._states) > self._limit:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(conversation_id)
        return state

    def __len__(self) -> int:
        return len(self._states)
