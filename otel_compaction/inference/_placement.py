"""What the history tracker reads and returns: a placement, a remembered history, a request.

The value objects of ``inference.history`` and the comparisons of one request with one
remembered history (prefix, branch, the response sent back), free of any state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_compaction.inference import carry
from otel_compaction.inference.messages import MessageFacts, describe
from otel_compaction.inference.rewrite import Rewrite, common_head

ANCHOR_MESSAGES = 4
"""Messages at most in a conversation's anchor (system prompt, then up to the first user
message)."""


@dataclass(slots=True)
class History:
    """The last request of one conversation, as the tracker remembers it."""

    conversation_id: str
    anchor: int
    system_key: int
    messages: list[Any]
    """The last request's messages (a copy, extended in place by the next call's new ones)."""
    facts: list[MessageFacts]
    last_used: float
    chars: int = 0
    expected: tuple[Any, ...] = ()
    tail_keys: tuple[int, ...] = ()
    tail_marks: tuple[tuple[int, int], ...] = ()
    """The characters (as described) and :func:`lead` of the messages of ``tail_keys``: a
    message changed in place between its description and its key could be passed over."""
    model: str | None = None
    carry: carry.Signature | None = None
    """What the whole-history replacement rule has read of it (``inference.carry``)."""
    opens_with_compaction: bool = False
    """Its first message is a compaction's text (a summary the last rewrite put first), not
    the task: the whole-history replacement rule then has no task statement to compare."""
    described_response: tuple[tuple[Any, ...], list[MessageFacts]] | None = None
    """``expected`` and its facts, once described (:func:`response_facts`)."""


@dataclass(slots=True)
class Placement:
    """Where a request belongs and what it brings (not to be changed once built; not
    frozen, since one is built on every LLM call and a frozen one costs twice as much).

    Args:
        conversation_id: the conversation (given or inferred).
        inferred: the tracker chose the id (no id was given).
        new_facts: facts of the messages new since the conversation's last call.
        rewrite: the compaction this request's history shows, if any.
        context_chars: characters of the whole request history.
        first: the conversation's first call seen.
        summarizer: the request is a summarizer's call drawing on ``conversation_id``
            (``inference.summarizer``): the compaction's cost, not a turn; nothing of it
            was remembered.
    """

    conversation_id: str
    inferred: bool
    new_facts: tuple[MessageFacts, ...]
    rewrite: Rewrite | None = None
    context_chars: int = 0
    first: bool = False
    summarizer: bool = False


@dataclass(slots=True)
class Request:
    """One request as the placement steps read it (not to be changed once built)."""

    system_key: int
    """The digest of its system prompt (0 without one)."""
    messages: tuple[Any, ...]
    facts: list[MessageFacts]
    """One per message."""
    model: str | None


@dataclass(frozen=True, slots=True)
class Asking:
    """What the placement of one request reads besides its messages."""

    system: Any
    tools: bool | None
    """Whether the request offers tools (None: unknown)."""


def anchor_of(system_key: int, facts: Sequence[MessageFacts]) -> int:
    """The anchor of a history: its system prompt and messages up to the first user one."""
    keys = []
    for fact in facts[:ANCHOR_MESSAGES]:
        keys.append(fact.key)
        if fact.role == "user":
            break
    return hash((system_key, tuple(keys)))


def extends(history: History, messages: Sequence[Any]) -> bool:
    """Whether ``messages`` begins with the history's last request (a C-speed comparison)."""
    count = len(history.messages)
    if len(messages) < count:
        return False
    try:
        return list(messages[:count]) == history.messages
    except Exception:  # noqa: BLE001 - a foreign __eq__ may raise: then it is no prefix
        return False


def grow(history: History, messages: Sequence[Any]) -> list[Any] | None:
    """The messages ``messages`` adds to the history's last request, if it extends it
    (the history's copy is then extended to equal it); None, the copy unchanged, if not."""
    if not extends(history, messages):
        return None
    added = list(messages[len(history.messages) :])
    history.messages.extend(added)
    return added


def response_facts(history: History) -> list[MessageFacts]:
    """The facts of the history's last response, described once per response: every
    request that could replace the history whole reads them, for each recent history."""
    described = history.described_response
    if described is None or described[0] is not history.expected:
        described = (history.expected, [describe(m) for m in history.expected])
        history.described_response = described
    return described[1]


def sent_back(
    history: History, count: int | None = None
) -> tuple[list[MessageFacts], tuple[Any, ...]]:
    """The last request with the response it got, as the next request would send them
    back: their facts and their messages (the old side of a rewrite). ``count``: the
    last request's length, when the copy of its messages has taken new ones already."""
    old_facts = [*history.facts, *(describe(m) for m in history.expected)]
    messages = history.messages if count is None else history.messages[:count]
    return old_facts, (*messages, *history.expected)


def branch(
    candidates: Sequence[History], facts: Sequence[MessageFacts], anchor: int
) -> tuple[History, int] | None:
    """The candidate sharing the longest prefix beyond the anchor (a retry from there)."""
    best: tuple[History, int] | None = None
    for history in candidates:
        common = common_head(history.facts, facts)
        if common > anchor and (best is None or common > best[1]):
            best = (history, common)
    return best


def by_response(candidates: Sequence[History], messages: Sequence[Any]) -> list[History]:
    """``candidates`` with those whose last response is the request's first new message
    first (each group in the order given)."""
    matching: list[History] = []
    others: list[History] = []
    for history in candidates:
        count = len(history.messages)
        expected = history.expected
        sent = messages[count] if expected and len(messages) > count else None
        if sent is not None and _same(describe(sent).key, expected[0]):
            matching.append(history)
        else:
            others.append(history)
    return [*matching, *others]


def _same(key: int, message: Any) -> bool:
    try:
        return describe(message).key == key
    except Exception:  # noqa: BLE001 - a foreign message that cannot be read matches nothing
        return False


def after_summary(facts: Sequence[MessageFacts]) -> int:
    """The index just past the first message carrying a summary (0 without one)."""
    for index, fact in enumerate(facts):
        if fact.summary is not None:
            return index + 1
    return 0
