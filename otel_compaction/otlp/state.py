"""Engine inputs applied in order: reorder window and de-duplication before the shared engine.

Spans of one conversation arrive in several batches, from several agents'
exporters, sometimes out of order and sometimes twice (an exporter retries a
batch it thinks was lost). ``ConversationState`` therefore:

1. holds each conversation's items for a short reorder window (like the
   Collector's ``groupbytrace`` ``wait_duration``), counted from the first item
   held, so a late span of the same burst is applied in turn order;
2. drops what it has already applied: span ids it remembers (bounded), turn
   indexes at or below the conversation's high-water mark, compaction ids the
   engine already recorded; a retried batch changes nothing;
   a turn 1 that started after the turn at the mark, in a conversation already
   past turn 1, is a resumed conversation, not a late turn: an agent process
   that restarts and resumes the conversation id numbers its turns from 1 again.
   Its turns are applied after the mark (``base`` + index), and the base is kept
   with the mark (and in the processor's snapshot) for its later turns. A turn 1
   sent again (a retry, a replay after a restart) started before the mark's turn:
   it stays late. A compaction delivered late is applied (at the current turn),
   but one numbered below the mark (``base`` + index) that started after the
   mark's turn is another run's under the same conversation id (its turns late
   too): it is late, not applied at a turn it never preceded;
3. bounds what an item makes it keep: a conversation, compaction or lineage
   parent id (or a compaction's trigger or error text) longer than
   ``MAX_ID_CHARS`` is replaced by ``bound_id``'s form (its
   first characters, its length and a digest of the whole, so distinct ids stay
   distinct), the form the findings and finding spans then carry; an id of a
   megabyte costs what one of 300 characters does;
4. reads other instrumentations' calls (``Item.call``) through
   ``otlp.inferred.CallInference`` in order: turns, summarizer costs and the
   compactions inferred between them (a call no key holds is given its
   conversation when offered, ``LooseGrouper``);
5. feeds the rest, in order, to the same ``ConversationRegistry`` and
   ``ConversationAnalyzer`` the in-process instrumentation uses, with the
   processor's own ``Settings``: verdicts are recomputed, never copied.

Not thread-safe: one thread owns it (the processor's pipeline thread, to which
receivers hand items through the pipeline's lock; ``analyze``'s only thread, with
a window of 0).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from otel_compaction._bounded import BoundedMap, RecentKeys
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer, ConversationRegistry
from otel_compaction.model import CompactionAnalysis, PhaseReport, TurnAnalysis
from otel_compaction.otlp.extract import Item, ItemKind
from otel_compaction.otlp.inferred import CallInference, LooseGrouper
from otel_compaction.semconv import KeySource, PhaseSource, ProcessorReason

logger = logging.getLogger(__name__)

SkipListener = Callable[[Item, ProcessorReason], None]
MAX_ID_CHARS = 256
"""A longer conversation, compaction or parent id is kept as ``bound_id`` makes it."""
_ID_PREFIX_CHARS = 64


def bound_id(value: str) -> str:
    """``value`` if it is at most ``MAX_ID_CHARS`` long, else its first 64 characters, then
    ``…[N chars, blake2b-128 HEX]``: the same id, the same form, in every process."""
    if len(value) <= MAX_ID_CHARS:
        return value
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{value[:_ID_PREFIX_CHARS]}…[{len(value)} chars, blake2b-128 {digest}]"


def _short(value: str | None) -> str | None:
    return bound_id(value) if value is not None and len(value) > MAX_ID_CHARS else value


def _bounded(item: Item) -> None:
    """Replace the over-long ids ``item`` would make the state keep (in place): its
    conversation id, and the strings a compaction's record keeps (ids, trigger, error)."""
    if len(item.conversation_id) > MAX_ID_CHARS:
        item.conversation_id = bound_id(item.conversation_id)
    seen = item.compaction
    if seen is None:
        return
    kept = (seen.compaction_id, seen.parent_id, seen.trigger, seen.error)
    if any(value is not None and len(value) > MAX_ID_CHARS for value in kept):
        item.compaction = dataclasses.replace(
            seen, compaction_id=_short(seen.compaction_id), parent_id=_short(seen.parent_id),
            trigger=_short(seen.trigger), error=_short(seen.error),
        )  # fmt: skip


@dataclass(slots=True)
class Applied:
    """An item the engine took, with what it said about it."""

    item: Item
    turn: TurnAnalysis | None = None
    compaction: CompactionAnalysis | None = None


class ReorderWindow:
    """Items held per conversation until ``window`` seconds after the first one came."""

    __slots__ = ("_held", "_size", "window")

    def __init__(self, window: float) -> None:
        self.window = window
        # Insertion order is first-arrival order, and every conversation waits the
        # same window, so the due conversations are always at the front.
        self._held: dict[str, tuple[float, list[Item]]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, items: Iterable[Item], now: float) -> None:
        """Hold ``items`` until their conversation's window closes."""
        held = self._held
        size = 0
        for item in items:
            entry = held.get(item.conversation_id)
            if entry is None:
                entry = held[item.conversation_id] = (now + self.window, [])
            entry[1].append(item)
            size += 1
        self._size += size

    def due(self, now: float) -> list[tuple[str, list[Item]]]:
        """Remove and return the conversations whose window has closed."""
        out = []
        for conversation_id, (deadline, items) in self._held.items():
            if deadline > now:
                break
            out.append((conversation_id, items))
        for conversation_id, items in out:
            del self._held[conversation_id]
            self._size -= len(items)
        return out

    def drain(self) -> list[tuple[str, list[Item]]]:
        """Remove and return everything held."""
        return self.due(float("inf"))


class ConversationState:
    """The reorder window, de-duplication and the shared engine for many conversations.

    Args:
        settings: the detectors' thresholds and the registry's bounds.
        window: the reorder window in seconds (0 applies items at the next step).
        dedupe_memory: how many span ids to remember for de-duplication.
        clock: monotonic seconds (injectable for tests).
        on_skip: told about every item not applied, with the reason.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        window: float = 2.0,
        dedupe_memory: int = 262_144,
        clock: Callable[[], float] = time.monotonic,
        on_skip: SkipListener | None = None,
    ) -> None:
        self.settings = settings
        self.registry = ConversationRegistry(settings, clock=clock)
        self.window = ReorderWindow(window)
        self._clock = clock
        self._recent = RecentKeys(dedupe_memory)
        # The turn mark and the start (ns) of the turn that set it are the analyzer's
        # ``mark`` and ``mark_ns``: they live and go with the conversation (a map of
        # their own cost an entry and a tuple per conversation, about 140 bytes).
        # Only conversations resumed by a new agent process: where its numbering starts.
        self._bases: BoundedMap[str, int] = BoundedMap(settings.max_conversations)
        self._on_skip = on_skip
        self.calls = CallInference(settings)
        """Other instrumentations' calls → turns, summarizer costs, inferred compactions."""
        self._loose = LooseGrouper(settings.max_conversations)

    @property
    def pending(self) -> int:
        """Items held in the reorder window."""
        return len(self.window)

    def offer(self, items: Iterable[Item]) -> None:
        """Hold items for the reorder window (their over-long ids bounded first, and a call
        no key holds given its group)."""
        items = list(items)
        for item in items:
            _bounded(item)
        self.place(items)
        self.window.add(items, self._clock())

    def place(self, items: list[Item]) -> None:
        """Give each call that no key holds its conversation (``inferred.LooseGrouper``), in
        arrival order; a call placed already keeps its place."""
        for item in items:
            call = item.call
            if call is not None and call.loose:
                item.conversation_id = self._loose.key(item)
                call.loose = False
                call.key_source = KeySource.LOOSE.value

    def take_due(self) -> list[tuple[str, list[Item]]]:
        """Remove the conversations whose window has closed, to ``apply`` them."""
        return self.window.due(self._clock())

    def take_all(self) -> list[tuple[str, list[Item]]]:
        """Remove everything held (shutdown), to ``apply`` it; the calls the inference
        holds for their next call come last (``CallInference.flush``)."""
        return self.window.drain() + self.calls.flush()

    def step(self) -> list[Applied]:
        """Apply every conversation whose window has closed."""
        return self.apply(self.take_due())

    def drain(self) -> list[Applied]:
        """Apply everything held now (shutdown)."""
        return self.apply(self.take_all())

    def expire(self) -> list[str]:
        """Forget conversations idle past ``conversation_idle_seconds``."""
        expired = self.registry.expire()
        for conversation_id in expired:
            self._bases.pop(conversation_id)
        return expired

    def remember(self, keys: Iterable[int]) -> None:
        """Take ``keys`` as applied already (restored from a snapshot: what a replay repeats)."""
        for key in keys:
            self._recent.add(key)

    def base(self, conversation_id: str) -> int:
        """Turns before the current agent process's turn 1 (0: never resumed)."""
        return self._bases.peek(conversation_id) or 0

    def turn_time(self, conversation_id: str) -> int:
        """The start (ns since the epoch) of the turn at the conversation's mark (0: none)."""
        analyzer = self.registry.peek(conversation_id)
        return 0 if analyzer is None else analyzer.mark_ns

    def tracked(self) -> list[tuple[ConversationAnalyzer, float, int]]:
        """Each tracked conversation's analyzer, idle seconds and turn mark, least recent first."""
        now = self._clock()
        out = []
        for conversation_id in self.registry.ids():
            analyzer = self.registry.peek(conversation_id)
            if analyzer is not None:
                out.append((analyzer, max(0.0, now - analyzer.last_seen), analyzer.mark))
        return out

    def adopt(
        self, conversation_id: str, idle: float, mark: int, base: int = 0, turn_ns: int = 0
    ) -> ConversationAnalyzer:
        """A fresh analyzer for a conversation restored from a snapshot (its state set after).

        Adopted least recent first, conversations keep their order in the registry's LRU.
        """
        analyzer = self.registry.get(conversation_id)
        analyzer.last_seen = self._clock() - idle
        if mark > 0:
            analyzer.mark, analyzer.mark_ns = mark, turn_ns
        if base > 0:
            self._bases.put(analyzer.conversation_id, base)
        return analyzer

    def apply(self, groups: list[tuple[str, list[Item]]], ordered: bool = False) -> list[Applied]:
        """Feed each conversation's items to the engine in turn order; return what it took.

        ``ordered``: each group's items are in turn order already (not sorted again).

        Items already applied are skipped: a span id remembered (``duplicate``),
        a turn index at or below the conversation's mark or a later run's compaction
        below it (``late``), a compaction id the engine already recorded (``duplicate``).
        """
        applied: list[Applied] = []
        for conversation_id, items in groups:
            if len(items) > 1 and not ordered:
                items.sort(key=Item.sort_key)
            analyzer = self.registry.get(conversation_id)
            self._apply_group(analyzer, self._expanded(conversation_id, items), applied)
        return applied

    def _expanded(self, conversation_id: str, items: list[Item]) -> list[Item]:
        """The items with other instrumentations' calls read by ``otlp.inferred`` (a new
        list: the group's own list is what the pipeline counts its batches by)."""
        if not any(item.call is not None for item in items):
            return items
        out: list[Item] = []
        for item in items:
            if item.call is None or item.expanded:
                out.append(item)
                continue
            if not self._recent.add(item.dedupe_key):
                self._skip(item, ProcessorReason.DUPLICATE)
                continue
            expanded = self.calls.expand(conversation_id, item)
            if not expanded:
                self._skip(item, ProcessorReason.DUPLICATE)  # the same call, traced twice
            out += expanded
        return out

    def _apply_group(
        self, analyzer: ConversationAnalyzer, items: list[Item], applied: list[Applied]
    ) -> None:
        # The hot loop of the processor (one pass per item): the turn mark is a
        # local and is written back once per conversation.
        remember = self._recent.add
        conversation_id = analyzer.conversation_id
        mark, mark_ns = analyzer.mark, analyzer.mark_ns
        base = self._bases.peek(conversation_id) or 0
        marked = False
        for item in items:
            if item.call is None and not remember(item.dedupe_key):
                self._skip(item, ProcessorReason.DUPLICATE)
                continue
            if item.kind is ItemKind.COMPACTION:
                if _renumbered(item, mark - base, mark_ns):
                    self._skip(item, ProcessorReason.LATE)
                    continue
                result = self._compaction(analyzer, item)
                if result is not None:
                    applied.append(result)
                continue
            if item.kind is ItemKind.SUMMARIZER:
                assert item.summarizer is not None
                analyzer.observe_summarizer(item.summarizer)  # the next compaction's cost
                continue
            turn_index = item.turn_index
            if turn_index is not None:
                if turn_index == 1 and base + 1 <= mark and item.time_ns > mark_ns > 0:
                    base = self._resumed(conversation_id, mark)
                turn_index += base
                if turn_index <= mark:
                    self._skip(item, ProcessorReason.LATE)
                    continue
            try:
                assert item.turn is not None
                if item.phase is not None:
                    analyzer.report_phase(item.phase)
                analysis = analyzer.observe_turn(item.turn)
            except Exception:  # one bad item must not stop the pipeline
                logger.exception("analysis failed for a span of %s", item.conversation_id)
                self._skip(item, ProcessorReason.ANALYSIS_ERROR)
                continue
            if turn_index is not None:
                mark, mark_ns, marked = turn_index, item.time_ns, True
            if analysis.settled is not None and analysis.settled.findings:
                settled = self.calls.annotate(analysis.settled)
                analysis = dataclasses.replace(analysis, settled=settled)
            applied.append(Applied(item, turn=analysis))
        if marked:
            analyzer.mark, analyzer.mark_ns = mark, mark_ns

    def _resumed(self, conversation_id: str, mark: int) -> int:
        """A new agent process numbers the conversation from 1 again: continue after ``mark``."""
        logger.info(
            "conversation %.200s resumed at turn 1 after turn %d (a new agent process): "
            "its turns continue from %d", conversation_id, mark, mark + 1,
        )  # fmt: skip
        self._bases.put(conversation_id, mark)
        return mark

    def _compaction(self, analyzer: ConversationAnalyzer, item: Item) -> Applied | None:
        assert item.compaction is not None
        known = item.compaction.compaction_id
        if known and analyzer.knows_compaction(known):
            self._skip(item, ProcessorReason.DUPLICATE)
            return None
        try:
            if item.phase is not None and not _already_reported(analyzer, item.phase):
                # The agent's phase at the moment of the compaction (reported since
                # the last turn): the boundary rule judges against it.
                analyzer.report_phase(item.phase)
            analysis = self.calls.annotate(analyzer.observe_compaction(item.compaction))
            if analysis is not None and analysis.settled is not None:
                analysis = dataclasses.replace(
                    analysis, settled=self.calls.annotate(analysis.settled)
                )
            return Applied(item, compaction=analysis)
        except Exception:  # one bad item must not stop the pipeline
            logger.exception("analysis failed for a span of %s", item.conversation_id)
            self._skip(item, ProcessorReason.ANALYSIS_ERROR)
            return None

    def _skip(self, item: Item, reason: ProcessorReason) -> None:
        if self._on_skip is not None:
            self._on_skip(item, reason)


def _renumbered(item: Item, mark: int, mark_ns: int) -> bool:
    """Whether a compaction numbered below the mark started after the mark's turn (or
    that turn's start is unknown, restored from a snapshot): numbered by another run under
    the same id, whose turns were late. Applied at the current turn, such compactions made
    livelocks of 0-turn intervals; one that started before is only delivered late."""
    index = item.turn_index
    return index is not None and index < mark and (mark_ns == 0 or item.time_ns > mark_ns)


def _already_reported(analyzer: ConversationAnalyzer, report: PhaseReport) -> bool:
    """Whether the analyzer's phase is this report already (re-reporting would reset it)."""
    current = analyzer.phase
    if current is None or current.source is not PhaseSource.REPORTED:
        return False
    if current.name != report.name:
        return False
    return report.confidence is None or abs(current.confidence - report.confidence) < 1e-3
