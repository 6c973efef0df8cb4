"""Compaction inferred from a rewritten history: what was dropped, what replaced it.

A request whose message list no longer extends the previous request of its
conversation was rewritten. Three shapes are recognised, in this order:

- **tool outputs cleared**: the same messages in the same places, some of them
  shorter (context editing in place), so ``prune``;
- **head replaced**: a kept head (system prompt, task), then new messages (the
  summary) where a run of older messages was, then a verbatim tail of the old
  history, then the messages new since the last call: ``lossy`` however long the
  verbatim tail (the caller turns it ``extractive`` only when what was dropped
  survives in the new context, :func:`~otel_compaction.lineage.text.survival`);
  without any inserted message it is a ``prune`` (messages dropped).
  Without a verbatim tail, the summary is what follows the head up to the first
  assistant message, and at least two assistant turns must be gone (else it is a
  retry from an earlier point), one when the conversation was at pressure (an agent
  whose fixed part fills the context compacts one call after the last). Either way
  the inserted messages are user or system text: a model reply or a tool result in
  their place is another history (a retry, a second agent with the same start), never
  a compaction;
- anything else is not a compaction (a new conversation that shares a head).

Only message digests are compared, so the cost is linear in the history and
paid only on a rewrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_compaction.inference.messages import MessageFacts, ends
from otel_compaction.semconv import CompactionMode, CompactionTrigger

MIN_DROPPED_TURNS = 2
"""Without a verbatim tail, a summary must replace at least this many assistant turns
(one replaced turn is also a retry from an earlier point, or an edited last message)."""
MIN_DROPPED_TURNS_AT_PRESSURE = 1
"""The same when the conversation was at pressure: an agent whose fixed part fills the
context compacts one call after the last, and a retry that swaps the model's last turn
for new user text at the trigger is rare (docs/instrumentation.md#conversations)."""


RESTART_KEYS = 16
"""Messages at each end of a remembered history (after its system messages) that a
candidate whole-history replacement is checked against before anything else is read of
the history: a restart sends its task (the first) or its last exchange again. The one
found is then checked against all of them (:func:`replaced_whole`)."""


@dataclass(frozen=True, slots=True)
class Rewrite:
    """An inferred compaction: the regions of the old and the new history."""

    mode: CompactionMode
    trigger: str
    dropped: tuple[Any, ...]
    inserted: tuple[Any, ...]
    retained: tuple[Any, ...]
    dropped_chars: int
    inserted_chars: int
    retained_chars: int
    new_start: int
    """Index in the new request where the messages new since the last call begin."""


def _chars(facts: Sequence[MessageFacts]) -> int:
    return sum(f.chars for f in facts)


def cleared_in_place(
    old: Sequence[MessageFacts], new: Sequence[MessageFacts], old_messages: Sequence[Any]
) -> Rewrite | None:
    """Same roles in the same places, and every changed message got shorter."""
    if len(new) < len(old) or not old:
        return None
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a.key != b.key]
    if not changed:
        return None
    for i in changed:
        if old[i].role != new[i].role or new[i].chars >= old[i].chars:
            return None
    dropped = tuple(old_messages[i] for i in changed)
    return Rewrite(
        mode=CompactionMode.PRUNE,
        trigger=CompactionTrigger.TOOL_OUTPUTS_CLEARED,
        dropped=dropped,
        inserted=(),
        retained=(),
        dropped_chars=sum(old[i].chars - new[i].chars for i in changed),
        inserted_chars=0,
        retained_chars=_chars(old) - sum(old[i].chars for i in changed),
        new_start=len(old),
    )


def common_head(old: Sequence[MessageFacts], new: Sequence[MessageFacts]) -> int:
    """How many leading messages ``old`` and ``new`` share (by content key)."""
    head = 0
    for a, b in zip(old, new, strict=False):
        if a.key != b.key:
            break
        head += 1
    return head


def _tail_run(
    old: Sequence[MessageFacts], new: Sequence[MessageFacts], head: int
) -> tuple[int, int, int]:
    """``(j, i, r)``: new[j:j+r] == old[i:i+r], the first such run after the head."""
    positions = {f.key: i for i, f in enumerate(old) if i >= head}
    for j in range(head, len(new)):
        i = positions.get(new[j].key)
        if i is None:
            continue
        r = 0
        while j + r < len(new) and i + r < len(old) and new[j + r].key == old[i + r].key:
            r += 1
        return j, i, r
    return len(new), len(old), 0


def _summary_end(new: Sequence[MessageFacts], start: int) -> int:
    """Without a verbatim tail, the summary runs up to the first assistant message after it."""
    for index in range(start + 1, len(new)):
        if new[index].is_assistant:
            return index
    return len(new)


def head_replaced(
    old: Sequence[MessageFacts],
    new: Sequence[MessageFacts],
    old_messages: Sequence[Any],
    new_messages: Sequence[Any],
    min_dropped_turns: int = MIN_DROPPED_TURNS,
) -> Rewrite | None:
    """A run of old messages replaced by new ones (or by nothing), a verbatim tail kept;
    without a tail, the summary must replace ``min_dropped_turns`` assistant turns."""
    head = common_head(old, new)
    j, i, r = _tail_run(old, new, head)
    if r == 0:
        # No verbatim tail: the summary is what follows the head, the rest is new.
        j, i = (_summary_end(new, head) if head < len(new) else head), len(old)
    dropped = old[head:i]
    inserted = new[head:j]
    if not dropped:
        return None
    if any(f.is_assistant or f.tool_results for f in inserted):
        # A summary is user or system text: a model reply or a tool result where the old
        # messages were is another history (a retry, a second agent), not a compaction.
        return None
    if r == 0 and not (inserted and sum(1 for f in dropped if f.is_assistant) >= min_dropped_turns):
        return None  # a branch from an earlier point (a retry) is no compaction
    if not inserted:
        mode, trigger = CompactionMode.PRUNE, CompactionTrigger.MESSAGES_DROPPED
    else:
        mode, trigger = CompactionMode.LOSSY, CompactionTrigger.HISTORY_REWRITTEN
    return _rewrite(mode, trigger, (old, new), (old_messages, new_messages), (head, i, j, r))


def edited_in_place(old: Sequence[MessageFacts], now: Sequence[MessageFacts]) -> Rewrite | None:
    """The same message objects read again after the caller changed some in place:
    a ``prune`` when some got shorter (their old text is gone, so nothing is dropped
    but characters), None when none did."""
    shorter = [(a, b) for a, b in zip(old, now, strict=True) if b.chars < a.chars]
    if not shorter:
        return None
    return Rewrite(
        mode=CompactionMode.PRUNE,
        trigger=CompactionTrigger.TOOL_OUTPUTS_CLEARED,
        dropped=(),
        inserted=(),
        retained=(),
        dropped_chars=sum(a.chars - b.chars for a, b in shorter),
        inserted_chars=0,
        retained_chars=_chars(now),
        new_start=len(now),
    )


def whole_shape(
    old: Sequence[MessageFacts],
    new: Sequence[MessageFacts],
    sent: Sequence[MessageFacts] = (),
) -> tuple[int, int] | None:
    """``(head, end)`` when ``new`` could replace the history ``old`` (followed by ``sent``,
    the response sent back) whole: its system messages kept, then ``new[head:end]``
    ending the request, user or system text repeating neither of the history's first nor
    last :data:`RESTART_KEYS` messages (a restart). At most ``2 * RESTART_KEYS`` of the
    history's messages are read (:func:`replaced_whole` reads them all)."""
    head = 0
    while head < len(old) and head < len(new) and old[head].role == "system":
        if old[head].key != new[head].key:
            return None
        head += 1
    end = _summary_end(new, head) if head < len(new) else head
    inserted = new[head:end]
    if not inserted or len(old) + len(sent) <= head or end < len(new):
        return None  # nothing new in place of the history, or a reply after it
    if any(f.role not in ("user", "system") or f.tool_results for f in inserted):
        return None
    seen = {f.key for f in (*ends(old, RESTART_KEYS, start=head), *sent)}
    if any(f.key in seen for f in inserted):
        return None  # the task (or the last exchange) sent again: a restart, not a summary
    return head, end


def replaced_whole(
    old: Sequence[MessageFacts],
    new: Sequence[MessageFacts],
    old_messages: Sequence[Any],
    new_messages: Sequence[Any],
) -> Rewrite | None:
    """The whole history after its system messages, task included, replaced by new user
    or system text never sent before (a summary), nothing kept verbatim; None if ``new`` is not
    that shape. Whether it is the *same* conversation is the caller's to judge (the
    shape alone is also a new conversation's first request)."""
    shape = whole_shape(old, new)
    if shape is None:
        return None
    head, end = shape
    inserted, dropped = new[head:end], old[head:]
    seen = {f.key for f in dropped}
    if any(f.key in seen for f in inserted):
        return None  # a message of the old history sent again: a restart, not a summary
    return Rewrite(
        mode=CompactionMode.LOSSY,
        trigger=CompactionTrigger.HISTORY_REPLACED,
        dropped=tuple(old_messages[head:]),
        inserted=tuple(new_messages[head:end]),
        retained=(),
        dropped_chars=_chars(dropped),
        inserted_chars=_chars(inserted),
        retained_chars=0,
        new_start=end,
    )


def summarized(
    old: Sequence[MessageFacts],
    new: Sequence[MessageFacts],
    old_messages: Sequence[Any],
    new_messages: Sequence[Any],
    summary_at: int,
) -> Rewrite | None:
    """The rewrite of ``old`` into ``new`` around ``new[summary_at]``, a message carrying a
    summarizer's answer: a kept head, the summary (in any role: it is known to be one),
    a verbatim tail of the old history if any, then what is new. None when it replaced
    nothing. The evidence is the summarizer's call, so no count of turns is asked for."""
    head = min(common_head(old, new), summary_at)
    positions = {f.key: i for i, f in enumerate(old) if i >= head}
    j, i, r = summary_at + 1, len(old), 0
    for index in range(summary_at + 1, len(new)):
        found = positions.get(new[index].key)
        if found is None:
            continue
        j, i = index, found
        while j + r < len(new) and i + r < len(old) and new[j + r].key == old[i + r].key:
            r += 1
        break
    if head >= i:
        return None  # nothing dropped
    spans = (head, i, j, r)
    return _rewrite(
        CompactionMode.LOSSY,
        CompactionTrigger.SUMMARIZER_CALL,
        (old, new),
        (old_messages, new_messages),
        spans,
    )


def _rewrite(
    mode: CompactionMode,
    trigger: str,
    facts: tuple[Sequence[MessageFacts], Sequence[MessageFacts]],
    messages: tuple[Sequence[Any], Sequence[Any]],
    spans: tuple[int, int, int, int],
) -> Rewrite:
    """The rewrite of old messages ``[head:i]`` by new ones ``[head:j]``, then a verbatim
    tail of ``r`` messages (``new[j:j + r]``)."""
    (old, new), (old_messages, new_messages), (head, i, j, r) = facts, messages, spans
    return Rewrite(
        mode=mode,
        trigger=trigger,
        dropped=tuple(old_messages[head:i]),
        inserted=tuple(new_messages[head:j]),
        retained=tuple(new_messages[j : j + r]),
        dropped_chars=_chars(old[head:i]),
        inserted_chars=_chars(new[head:j]),
        retained_chars=_chars(new[j : j + r]),
        new_start=j + r,
    )


def infer_rewrite(
    old: Sequence[MessageFacts],
    new: Sequence[MessageFacts],
    old_messages: Sequence[Any],
    new_messages: Sequence[Any],
    min_dropped_turns: int = MIN_DROPPED_TURNS,
) -> Rewrite | None:
    """The compaction that turned ``old`` into ``new``, or None if it is not one."""
    return cleared_in_place(old, new, old_messages) or head_replaced(
        old, new, old_messages, new_messages, min_dropped_turns
    )
