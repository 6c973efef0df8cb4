"""A cheap token estimate for text whose token count nobody reported.

Provider responses report exact token usage; this estimate is only for texts
seen without usage (a summary in a transcript, a tool output, a retained tail).
It is deliberately crude and deterministic: one token per four characters,
rounded up. That matches English prose and code under the current OpenAI and
Anthropic tokenizers to within about ±30% (newer Claude tokenizers count about
30% more tokens for the same text; CJK text runs closer to one token per
character). Every consumer compares estimates with estimates of the same kind,
so the bias cancels where it matters (duplicated and carried-over tokens).
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4
"""The divisor of the estimate: characters per token."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``: ``ceil(len(text) / 4)``, 0 for empty text."""
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    """Estimated tokens in ``chars`` characters of text: ``ceil(chars / 4)``."""
    return -(-chars // CHARS_PER_TOKEN)
