"""What the handler remembers of each conversation between LangChain runs.

The analysis state (turns, lineage, detectors) lives in the shared
``ConversationRegistry``; this is only what is needed to read LangChain's
histories: which messages were already seen (new content per turn), which tool
results were already counted as cleared, how big tool results were before they
were cleared, langmem's last running summary, and the calibration of our token
estimate against the provider's usage. Every collection is bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from otel_compaction._bounded import BoundedMap

SEEN_MEMORY = 4096
"""Message keys remembered per conversation (older ones count as new again)."""
TEXT_MEMORY = 8
"""Summarizer inputs kept per conversation until the compaction they feed."""
SCALE_BOUNDS = (0.25, 4.0)
"""The calibration factor is clamped here: a wild usage figure must not distort sizes."""


def _keys(limit: int = SEEN_MEMORY) -> Callable[[], BoundedMap[str, int]]:
    """A factory of bounded key memories (each key with an integer, e.g. a size)."""
    return lambda: BoundedMap(limit)


@dataclass(slots=True)
class ConversationMemory:
    """LangChain-side memory of one conversation (see the module docstring)."""

    seen: BoundedMap[str, int] = field(default_factory=_keys())
    sizes: BoundedMap[str, int] = field(default_factory=_keys())
    cleared: BoundedMap[str, int] = field(default_factory=_keys())
    tool_tokens: BoundedMap[str, int] = field(default_factory=_keys())
    handled_summaries: BoundedMap[str, int] = field(default_factory=_keys(64))
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


class ConversationMemories:
    """Per-conversation ``ConversationMemory``, least recently used evicted past ``limit``."""

    __slots__ = ("_states",)

    def __init__(self, limit: int) -> None:
        self._states: BoundedMap[str, ConversationMemory] = BoundedMap(max(1, limit))

    def get(self, conversation_id: str) -> ConversationMemory:
        """The conversation's state, created on first use."""
        return self._states.cached(conversation_id, _new_state)

    def __len__(self) -> int:
        return len(self._states)


def _new_state(_conversation_id: str) -> ConversationMemory:
    return ConversationMemory()
