"""A step's due conversations applied in rounds that finish the oldest requests first.

Conversations become due together: every one whose first span arrived in the same
second closes its reorder window in the same step. Applied conversation by
conversation, no request of that step could leave before the last conversation is
done, and every request in the step, the oldest ones (those that already waited the
whole window) included, would wait for all of the step's work. Requests interleave
conversations, so the oldest request holds the first items of most of them.

``rounds`` cuts the step instead: round *r* applies, of each conversation, the items
up to the *r*-th frontier of request sequence numbers, in the conversation's own turn
order, so each conversation sees its items in exactly the order it would have seen
them in one pass (a prefix, then the next part), and the oldest requests are complete
after the first round and leave while the next rounds run. An item that came late (a
newer request holding an earlier turn) stops its conversation's prefix at that point,
so the requests behind it wait for the round that takes it: order is never traded for
latency. At most ``ROUNDS`` rounds a step; a round visits only the conversations it
takes items of (a heap by their next item's request); a step under ``LEAST_ITEMS``
items is applied in one.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from itertools import accumulate

from otel_compaction.otlp.extract import Item

ROUNDS = 16
"""At most this many rounds a step (each costs a pass over its conversations)."""
LEAST_ITEMS = 2_048
"""A step with fewer items is applied in one round (its work is short anyway)."""

Groups = list[tuple[str, list[Item]]]


def rounds(groups: Groups, seq: Callable[[Item], int]) -> list[Groups]:
    """``groups`` (conversation id, its due items) cut into at most ``ROUNDS`` rounds by
    ``seq`` (an item's request order); every list handed back is in turn order (sorted
    here, not again when applied), and the rounds applied one after another apply every
    item once."""
    for _, items in groups:
        if len(items) > 1:
            items.sort(key=Item.sort_key)
    total = sum(len(items) for _, items in groups)
    count = ROUNDS
    if total < LEAST_ITEMS or count <= 1:
        return [groups]
    # Per conversation, the latest request among its first j+1 items (turn order): the
    # items a round with frontier f takes are those whose running latest is <= f.
    latest: list[list[int]] = []
    per_seq: Counter[int] = Counter()
    for _, items in groups:
        seqs = list(map(seq, items))
        per_seq.update(seqs)
        latest.append(list(accumulate(seqs, max)))
    out: list[Groups] = []
    starts = [0] * len(groups)
    # Conversations by when their next item can go: a round visits only those it takes.
    waiting = [(marks[0], i) for i, marks in enumerate(latest) if marks]
    heapq.heapify(waiting)
    for frontier in _frontiers(per_seq, total, count):
        round_: Groups = []
        while waiting and waiting[0][0] <= frontier:
            _, i = heapq.heappop(waiting)
            conversation_id, items = groups[i]
            marks, start = latest[i], starts[i]
            end = bisect_right(marks, frontier, start)
            round_.append((conversation_id, items[start:end] if start or end < len(items)
                           else items))  # fmt: skip
            starts[i] = end
            if end < len(items):
                heapq.heappush(waiting, (marks[end], i))
        if round_:
            out.append(round_)
    return out


def _frontiers(per_seq: Counter[int], total: int, count: int) -> list[float]:
    """Request sequence numbers that cut ``total`` items into about ``count`` equal rounds;
    the last is infinite, so every item is in some round."""
    out: list[float] = []
    seen = 0
    for seq in sorted(per_seq):
        seen += per_seq[seq]
        if seen * count >= total * (len(out) + 1) and len(out) < count - 1:
            out.append(seq)
    out.append(float("inf"))
    return out
