"""The per-conversation lineage tracker: compaction ids, parents, generations, cycles.

Lineage follows what was carried over. Rules, first match wins:

1. the observation names a ``parent_id``: that compaction is the parent (an
   unknown parent, e.g. one evicted from memory, gives generation 1 and root =
   the parent's id);
2. ``continues_lineage=False``: a new lineage;
3. the summary's text is known and an earlier summary is remembered: the parent
   is the newest earlier summary whose content this summary *carries*: at least
   ``Settings.lineage_carry_over`` of that summary's word 5-grams occur in it
   (all of them for a summary of fewer than ``SHORT_SUMMARY_SHINGLES``; an exact
   repeat counts too). None carried: a new lineage, even when the
   earlier summary sat in the region this compaction replaced (the livelock incident's
   remedy: re-summarize from raw retained turns, dropping the prior summary);
4. ``continues_lineage=True``: the previous compaction is the parent;
5. the summary's text is unknown but the compacted texts are known: a compacted
   message is (or contains) an earlier summary, so the summarizer read it: the
   newest such compaction is the parent; none among them, with earlier summaries
   remembered: a new lineage;
6. nothing is known (fingerprints only, e.g. the processor without content):
   summarize-then-truncate compacts everything before the retained tail, and the
   previous summary sits at its head, so the compaction (not a prune) continues
   the latest one that produced a summary (failed ones and prunes left none);
   otherwise a new lineage. Such a parent is only *assumed*.

A child has ``generation = parent.generation + 1`` and the parent's root; a new
lineage has generation 0 and is its own root.

Memory is bounded: at most ``Settings.max_compactions_per_conversation``
records, and shingle sketches of the last ``SKETCH_MEMORY`` summaries only. Both
are tuples, replaced on each compaction (rare next to turns): a conversation
without compactions holds none. A settled record is kept packed
(:mod:`otel_compaction.lineage.packed`, about 190 bytes where the record is about
500); ``records`` unpacks them, the tracker's own scans read the ids without.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from otel_compaction.config import Settings
from otel_compaction.lineage import text as txt
from otel_compaction.lineage.cycles import CycleAccumulator
from otel_compaction.lineage.packed import PackedRecord, pack, unpacked
from otel_compaction.lineage.schema import judge_summary
from otel_compaction.model import CompactionObservation, CompactionRecord, Cycle
from otel_compaction.semconv import CompactionMode
from otel_compaction.signals.tokens import estimate_tokens

SKETCH_MEMORY = 4
PACKED_RECORDS = 8
"""The most records a conversation keeps packed: each compaction unpacks them (the rules read
the whole history, a few microseconds a record), so a conversation of many compactions keeps
its later ones as they are, its CPU time per compaction bounded."""
SHORT_SUMMARY_SHINGLES = 16
"""A summary with fewer word 5-grams than this (about 20 words) is matched only when all of
them are there: templated short summaries share most of their few 5-grams by chance."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Known:
    """A remembered summary: its compaction and shingle sketch."""

    compaction_id: str
    sketch: txt.Sketch


@dataclass(frozen=True, slots=True)
class _Lineage:
    parent_id: str | None
    root_id: str
    generation: int
    assumed: bool = False


class LineageTracker:
    """Turns a conversation's turns and compaction observations into ``CompactionRecord``s.

    Not thread-safe: the conversation's analyzer serialises calls.
    """

    __slots__ = (
        "_conversation_id",
        "_cycle",
        "_history",
        "_known",
        "_records",
        "_settings",
        "_turn_index",
    )

    STATE_FIELDS: ClassVar = ("cycle", "known", "records", "turn_index")
    """The names of :meth:`state`'s values (the id and settings are the constructor's)."""

    def __init__(self, conversation_id: str, settings: Settings) -> None:
        self._conversation_id = conversation_id
        self._settings = settings
        self._records: tuple[CompactionRecord | PackedRecord, ...] = ()
        """The records, oldest first: settled ones packed (when they pack)."""
        self._history: tuple[CompactionRecord, ...] | None = None
        """The records unpacked (:meth:`history`), until a record is next packed."""
        self._known: tuple[_Known, ...] = ()
        self._cycle = CycleAccumulator()
        self._turn_index = 0

    def state(self) -> dict[str, Any]:
        """What the tracker remembers, as plain values: the records, the remembered
        summaries as ``(compaction id, Sketch)`` pairs, the open cycle's sums (turns, new
        content, first and last context) and the last turn; :meth:`restore` takes it."""
        c = self._cycle
        return {
            "cycle": (c.turns, c.new_content_tokens, c.first_context_tokens, c.last_context_tokens),
            "known": tuple((k.compaction_id, k.sketch) for k in self._known),
            "records": self.records,
            "turn_index": self._turn_index,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take what :meth:`state` returned (of a tracker of the same id and settings)."""
        cycle, known, records, turn_index = map(state.__getitem__, self.STATE_FIELDS)
        self._cycle = CycleAccumulator(*cycle)
        self._known = tuple(_Known(cid, sketch) for cid, sketch in known)
        self._records = tuple(map(self._kept, records))
        self._history = None
        self._turn_index = turn_index

    @property
    def records(self) -> tuple[CompactionRecord, ...]:
        """The remembered compactions, oldest first."""
        if self._history is not None:
            return self._history
        cid = self._conversation_id
        return tuple(unpacked(r, cid) for r in self._records)

    def history(self) -> tuple[CompactionRecord, ...]:
        """:attr:`records`, kept unpacked until a record is next packed: the compaction about
        to be observed reads them, and so does its settlement (the next call), where
        unpacking them twice would cost a few microseconds a record each time."""
        history = self._history = self.records
        return history

    @property
    def last(self) -> CompactionRecord | None:
        """The latest compaction, if any."""
        return unpacked(self._records[-1], self._conversation_id) if self._records else None

    def knows(self, compaction_id: str) -> bool:
        """Whether ``compaction_id`` is among the remembered compactions."""
        return any(r.compaction_id == compaction_id for r in self._records)

    def _kept(self, record: CompactionRecord) -> CompactionRecord | PackedRecord:
        """How ``record`` is kept: packed once settled (and of this conversation), while
        fewer than :data:`PACKED_RECORDS` are."""
        if record.tokens_after is None or record.conversation_id != self._conversation_id:
            return record
        if sum(type(r) is PackedRecord for r in self._records) >= PACKED_RECORDS:
            return record
        return pack(record)

    def _unpacked(self, at: int) -> CompactionRecord:
        """The record at index ``at`` of the records kept, unpacked."""
        history = self._history
        if history is not None:
            return history[at]
        return unpacked(self._records[at], self._conversation_id)

    def observe_turn(self, turn_index: int, context_tokens: int, new_content_tokens: int) -> None:
        """Account one turn (one LLM call) in the current cycle."""
        if turn_index > self._turn_index:
            self._turn_index = turn_index
        self._cycle.observe_turn(context_tokens, new_content_tokens)

    def observe_compaction(
        self,
        obs: CompactionObservation,
        *,
        window: int | None = None,
        fixed_tokens: int | None = None,
    ) -> CompactionRecord:
        """Record a compaction and return it with its lineage, cycle and summary scores
        (``fixed_tokens``: the fixed part known now, kept when it is settled at once)."""
        compaction_id = obs.compaction_id or uuid.uuid4().hex
        turn_index = obs.turn_index if obs.turn_index is not None else self._turn_index + 1
        summary = obs.summary_text
        summary_tokens = obs.summary_tokens
        if summary_tokens is None and summary is not None:
            summary_tokens = estimate_tokens(summary)
        lineage = self._lineage(compaction_id, obs)
        duplicated, carried = self._overlaps(summary, summary_tokens, obs, lineage.parent_id)
        s = self._settings
        verdict = judge_summary(summary, s.schema_fields, s.schema_template)
        record = CompactionRecord(
            compaction_id=compaction_id,
            conversation_id=self._conversation_id,
            turn_index=turn_index,
            source=obs.source,
            mode=obs.mode,
            trigger=obs.trigger,
            tokens_before=obs.tokens_before,
            tokens_after=obs.context_after,
            summary_tokens=summary_tokens,
            retained_tail_tokens=obs.retained_tail_tokens,
            duplicated_tokens=duplicated,
            carried_over_tokens=carried,
            parent_id=lineage.parent_id,
            root_id=lineage.root_id,
            generation=lineage.generation,
            lineage_assumed=lineage.assumed,
            cycle=self._close_cycle(obs, turn_index),
            token_fraction=_fraction(obs.tokens_before, window),
            failed=obs.failed,
            summary_fingerprint=txt.fingerprint(summary) if summary else None,
            schema_coverage=verdict.coverage,
            missing_fields=verdict.missing,
            timestamp=obs.timestamp,
            window=window,
            tokens_after_reported=obs.tokens_after,
            error=obs.error,
            growth_per_turn=self._cycle.growth_per_turn(obs.tokens_before),
            summarizer=obs.summarizer,
            fixed_tokens=fixed_tokens if obs.context_after is not None else None,
            compacted_tokens=compacted_tokens(obs),
            summary_template=None if verdict.template is None else verdict.template.value,
        )
        self._remember(record, summary)
        return record

    def settle(
        self, context_after: int, fixed_tokens: int | None = None
    ) -> CompactionRecord | None:
        """Give the latest compaction its size after (the first call's context), if it has
        none, and the fixed part of the context known then.

        Returns the settled record (which replaces the remembered one), or None when
        there is no unsettled compaction.
        """
        last = self.last
        if last is None or last.settled:
            return None
        settled = dataclasses.replace(
            last, tokens_after=max(0, context_after), fixed_tokens=fixed_tokens
        )
        self._records = (*self._records[:-1], self._kept(settled))
        self._history = None  # the conversation may idle now: only the packed form stays
        return settled

    def is_known_summary(self, text: str) -> str | None:
        """The id of the compaction whose summary ``text`` is (or contains), if any."""
        return self._containing(text, txt.CONTAINMENT_MATCH)

    def _containing(self, text: str, threshold: float) -> str | None:
        """The compaction whose summary ``text`` repeats exactly, else the newest whose
        containment in ``text`` is at or above ``threshold`` (a summary that carries the
        previous one carries what that one carried too: the newest is the parent)."""
        fp = txt.fingerprint(text)
        for record in reversed(self._records):
            if record.summary_fingerprint == fp:
                return record.compaction_id
        if not self._known:
            return None
        tokens = txt.words(text)
        by_k: dict[int, set[int]] = {}
        for known in reversed(self._known):
            k = known.sketch.k
            if k not in by_k:
                by_k[k] = txt.shingles(tokens, k)
            score = txt.containment(known.sketch, by_k[k])
            # A few shared words are too little evidence: a short summary must be there whole.
            needed = 1.0 if len(known.sketch.hashes) < SHORT_SUMMARY_SHINGLES else threshold
            if score >= needed:
                return known.compaction_id
        return None

    def _find(self, compaction_id: str) -> CompactionRecord | None:
        for at in range(len(self._records) - 1, -1, -1):
            if self._records[at].compaction_id == compaction_id:
                return self._unpacked(at)
        return None

    def _lineage(self, compaction_id: str, obs: CompactionObservation) -> _Lineage:
        parent_id, assumed = self._parent_id(obs)
        if parent_id is None:
            return _Lineage(None, compaction_id, 0)
        parent = self._find(parent_id)
        if parent is None:
            return _Lineage(parent_id, parent_id, 1, assumed)
        return _Lineage(parent_id, parent.root_id, parent.generation + 1, assumed)

    def _parent_id(self, obs: CompactionObservation) -> tuple[str | None, bool]:
        """Apply the lineage rules of the module docstring, in order: the parent, and
        whether it was only assumed (rule 6)."""
        if obs.parent_id is not None:
            return obs.parent_id, False
        if obs.continues_lineage is False:
            return None, False
        summary = obs.summary_text
        if summary and summary.strip() and self._known:
            return self._containing(summary, self._settings.lineage_carry_over), False
        if obs.continues_lineage is True:
            return (self._records[-1].compaction_id if self._records else None), False
        matched = self._match_compacted(obs.compacted_texts)
        if matched is not None:
            return matched, False
        if obs.compacted_texts and self._known:
            return None, False
        if obs.mode is CompactionMode.PRUNE:
            return None, False
        # The previous summary: failed compactions and prunes left none behind.
        produced = next(
            (r for r in reversed(self._records)
             if not r.failed and r.mode is not CompactionMode.PRUNE),
            None,
        )  # fmt: skip
        return (None, False) if produced is None else (produced.compaction_id, True)

    def _match_compacted(self, texts: tuple[str, ...]) -> str | None:
        """The newest compaction whose summary appears among the compacted messages."""
        order = {r.compaction_id: i for i, r in enumerate(self._records)}
        best: str | None = None
        for text in texts:
            found = self.is_known_summary(text) if text.strip() else None
            if found is not None and (best is None or order.get(found, -1) > order.get(best, -1)):
                best = found
        return best

    def _overlaps(
        self,
        summary: str | None,
        summary_tokens: int | None,
        obs: CompactionObservation,
        parent_id: str | None,
    ) -> tuple[int | None, int | None]:
        """Estimate ``duplicated`` and ``carried_over`` tokens by shingle overlap."""
        if summary is None or summary_tokens is None:
            return None, None
        tokens = txt.words(summary)
        own = txt.shingles(tokens, txt.SHINGLE_WORDS)
        duplicated: int | None = None
        if obs.retained_texts:
            tail: set[int] = set()
            for retained in obs.retained_texts:
                tail |= txt.shingles(txt.words(retained), txt.SHINGLE_WORDS)
            duplicated = txt.repeated_tokens(txt.overlap_fraction(own, tail), summary_tokens)
        carried: int | None = None
        parent = next((k for k in self._known if k.compaction_id == parent_id), None)
        if parent is not None:
            mine = (
                own
                if parent.sketch.k == txt.SHINGLE_WORDS
                else txt.shingles(tokens, parent.sketch.k)
            )
            carried = txt.repeated_tokens(txt.overlap_fraction(mine, parent.sketch), summary_tokens)
        elif parent_id is None:
            carried = 0  # a fresh lineage has no previous summary to carry over
        return duplicated, carried

    def _close_cycle(self, obs: CompactionObservation, turn_index: int) -> Cycle | None:
        # A cycle is summarize-to-summarize: a prune (tool outputs cleared,
        # Claude Code's micro-compaction) happens inside a cycle and neither ends nor
        # starts one, so frequent prunes never look like an accelerating cadence.
        if obs.mode is CompactionMode.PRUNE:
            return None
        records = self._records
        at = next(
            (i for i in range(len(records) - 1, -1, -1)
             if records[i].mode is not CompactionMode.PRUNE),
            None,
        )  # fmt: skip
        previous = None if at is None else self._unpacked(at)
        return self._cycle.close(previous, turn_index, obs.tokens_before)

    def _remember(self, record: CompactionRecord, summary: str | None) -> None:
        limit = self._settings.max_compactions_per_conversation
        kept = self._kept(record)
        self._records = _bounded(self._records, kept, limit)
        history = self._history
        if history is not None and not record.settled:  # read again at its settlement
            self._history = _bounded(history, record, limit)
        else:
            self._history = None
        if record.mode is not CompactionMode.PRUNE:
            self._cycle.reset()
        if summary:
            sk = txt.sketch(summary)
            if sk is not None:
                self._known = _bounded(self._known, _Known(record.compaction_id, sk), SKETCH_MEMORY)


def _bounded(items: tuple[_T, ...], item: _T, limit: int) -> tuple[_T, ...]:
    """``items`` with ``item`` appended, keeping the newest ``limit`` (as a bounded deque)."""
    out = (*items, item)
    return out[len(out) - limit :] if len(out) > limit else out


def _fraction(tokens: int | None, window: int | None) -> float | None:
    if tokens is None or window is None or window <= 0:
        return None
    return min(1.0, max(0.0, tokens / window))


def compacted_tokens(obs: CompactionObservation) -> int | None:
    """Size of the compacted region: from its texts, else as the source measured it,
    else before minus the retained tail."""
    if obs.compacted_texts:
        return sum(estimate_tokens(t) for t in obs.compacted_texts)
    if obs.compacted_tokens is not None:
        return obs.compacted_tokens
    if obs.tokens_before is not None and obs.retained_tail_tokens is not None:
        return max(0, obs.tokens_before - obs.retained_tail_tokens)
    return None
