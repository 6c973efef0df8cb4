"""A summarizer's call is never the agent's turn: what tells one, and what a summary carries.

An agent (or its framework) that compacts with a model call of its own sends a
request that asks for a summary of the agent's old messages, then sends the agent's
next request with that summary in place of them. The first is the compaction's cost;
the second is the compaction, in the agent's conversation, at its turn. The evidence,
read by :class:`~otel_compaction.inference.history.HistoryTracker` only on requests
that do not simply extend a known history (so never on a continuing call):

- **a summarizer's request** (:func:`asks_to_summarize`): a summarize instruction in
  its system prompt or its last message, and no tools offered; and it draws on a
  conversation of the same thread or task (it carries messages of that history, or
  the text of its latest ones), without extending it. A request made inside a
  framework's summarization hook needs no instruction: the hook says what it is;
- **the request that carries the summary**: a message whose text holds the
  summarizer's answer (its first :data:`OUTPUT_MATCH_CHARS` characters);
- **a summary written by the agent itself** (:func:`marked_summary`): a whole-history
  replacement whose text says what it is (``Summary of the work so far...``,
  ``Continue from here``) and is at most :data:`SUMMARY_FALL` of what it replaces.

The false-positive guards: an instruction alone is not enough (a fresh task that asks
to summarize a document draws on no other conversation, so it starts its own); a
request that offers tools is an agent's turn; a marker alone is not enough (the text
must replace a history of at least two model turns and be much shorter); and all of it
stays within one thread or asyncio task. docs/concepts.md gives the rationale.

Everything here reads a bounded amount of text (:data:`READ_CHARS` per field), so the
cost per call does not grow with what the agent sent before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from otel_compaction.inference.messages import MessageFacts, text_of

READ_CHARS = 2_000
"""Characters read from the start and the end of a system prompt or a last message when
looking for a summarize instruction or a summary marker."""
SNIPPET_CHARS = 160
"""Characters of a remembered message looked for in a summarizer's request (a transcript
pasted as text rather than sent as messages)."""
TRANSCRIPT_CHARS = 65_536
"""Characters at the end of a summarizer's last two messages searched for those openings
(a transcript ends with the latest messages), so a huge prompt costs no more."""
SNIPPET_MIN = 64
"""Messages shorter than this are not looked for as text (too common to tell histories apart)."""
SNIPPET_MESSAGES = 4
"""The latest messages of a history looked for as text in a summarizer's request."""
OUTPUT_MATCH_CHARS = 200
"""Characters of a summarizer's answer that a later request must carry to be its compaction."""
OUTPUT_MIN_CHARS = 16
"""A summarizer's answer shorter than this is not looked for (it would match by accident)."""
SUMMARY_FALL = 0.5
"""A whole-history replacement that says it is a summary must be at most this share of the
text it replaces (a large fall in context): a summary is much shorter than the history."""

_INSTRUCTION = re.compile(
    r"\bsummari[sz](?:e|es|ing|er|ation)\b"
    r"|\b(?:write|create|produce|provide|generate|give)\s+(?:a|an|the)?\s*(?:\w+\s+){0,2}summary\b"
    r"|\bcondense\s+(?:this|the)\s+(?:conversation|history|transcript)\b",
    re.IGNORECASE,
)
_MARKER_START = re.compile(
    r"^\W{0,8}(?:(?:conversation|context|progress|session|running|previous|prior|work|task)\s+)?"
    r"summary\b",
    re.IGNORECASE,
)
_MARKER_ANYWHERE = re.compile(
    r"\bsummary of (?:the|our|this|my|previous|prior|earlier) "
    r"(?:work|conversation|session|progress|discussion|context|steps)\b"
    r"|\bcontinue from here\b|\bcontinu(?:e|ing) (?:from|where) (?:the|a|we) (?:previous|left)"
    r"|\bbeing continued from a previous conversation\b",
    re.IGNORECASE,
)
SYSTEM_ROLES = frozenset({"system", "developer"})


def _ends(text: str) -> str:
    """The start and the end of ``text`` (all of it when short)."""
    if len(text) <= 2 * READ_CHARS:
        return text
    return text[:READ_CHARS] + "\n" + text[-READ_CHARS:]


def system_text(system: Any, facts: Sequence[MessageFacts]) -> str:
    """A request's system prompt (argument and leading system messages), bounded."""
    parts = [_ends(text_of(system))] if system else []
    for fact in facts:
        if fact.role not in SYSTEM_ROLES:
            break
        parts.append(_ends(text_of(fact.message)))
    return "\n".join(parts)


def last_text(facts: Sequence[MessageFacts]) -> str:
    """A request's last message (not a system message), bounded."""
    if not facts or facts[-1].role in SYSTEM_ROLES:
        return ""
    return _ends(text_of(facts[-1].message))


def system_keys(system_key: int, facts: Sequence[MessageFacts]) -> tuple[int, ...]:
    """What identifies a request's system prompt: the argument's digest and the keys
    of its leading system messages (OpenAI Chat sends the prompt as messages)."""
    keys = [system_key]
    for fact in facts:
        if fact.role not in SYSTEM_ROLES:
            break
        keys.append(fact.key)
    return tuple(keys)


def asks_to_summarize(instruction_text: str) -> bool:
    """Whether the text holds a summarize instruction (``Summarize...``, ``You are a
    conversation summarizer``, ``write a summary``), not merely the word *summary*."""
    return _INSTRUCTION.search(instruction_text) is not None


def marked_summary(text: str) -> bool:
    """Whether ``text`` says it is a summary: ``Summary...`` at its start, or ``summary of
    the work/conversation``, ``continue from here`` near its start or its end."""
    text = text.lstrip()
    if _MARKER_START.match(text[:READ_CHARS]) is not None:
        return True
    return _MARKER_ANYWHERE.search(_ends(text)) is not None


def carries_text(request_text: str, messages: Iterable[Any]) -> bool:
    """Whether ``request_text`` holds the opening of one of ``messages``' texts (a
    transcript of them pasted into the summarizer's prompt)."""
    for message in messages:
        text = text_of(message).strip()
        if len(text) >= SNIPPET_MIN and text[:SNIPPET_CHARS] in request_text:
            return True
    return False


def output_needle(output: str) -> str | None:
    """What of a summarizer's answer a later request is searched for, None if too short."""
    needle = output.strip()[:OUTPUT_MATCH_CHARS]
    return needle if len(needle) >= OUTPUT_MIN_CHARS else None


def carrying(messages: Sequence[Any], needle: str) -> int | None:
    """The index of the first message whose text holds ``needle``, if any."""
    for index, message in enumerate(messages):
        if needle in text_of(message):
            return index
    return None
