"""The per-conversation engine: signals, lineage and detectors glued together.

``ConversationAnalyzer`` follows one conversation turn by turn; it is what the
instrumentation, the transcript importers and the processor service all feed
(``engine.registry.ConversationRegistry`` holds many of them).

Order of calls on a conversation: ``report_phase`` whenever the agent knows its
phase; ``observe_compaction`` as soon as a compaction is known and *before*
``observe_turn`` of the first call that sees the compacted context;
``observe_turn`` once per LLM call.

A compaction is judged in two steps. On ``observe_compaction``, by the rules that
need only the state it fired in; once it is *settled*, by those that need the size
after it (``needs_size_after``: ineffective compaction, no progress, a lost task).
The size after is the context of the first call that sees the compacted context:
given with the observation (``context_after``) it settles at once; otherwise the
next ``observe_turn`` settles it and returns what it found in
``TurnAnalysis.settled``. The next compaction may judge it once more, by how many
calls it bought (``ineffective.refilled``): returned in its ``settled``, marked
``hindsight``.

The summarizer's own calls (``observe_summarizer``) are no turns: their cost goes on
the compaction reported next, and they count in no interval, pressure or phase.

Every call is thread-safe and cheap (a few dozen arithmetic operations per turn; text
matching only on compactions).

An analyzer is small, since a registry may hold 100,000 of them (about 1.4 KB each
with two compactions, see ``docs/benchmarks.md``): it has ``__slots__``; its
trackers keep tuples, ``array``s and packed bytes rather than deques, settled
compaction records packed (``lineage.packed``), and the
last pressure and phase estimate as their inputs, rebuilt when asked for; the
analyzers of one registry share a few striped locks; everything derived from the
settings (matrices, categorizer, decay weights) is shared.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Final

from otel_compaction._bounded import BoundedMap
from otel_compaction.config import Settings
from otel_compaction.detectors import (
    DEFAULT_DETECTORS,
    DetectionContext,
    Detector,
    needs_run_end,
    needs_size_after,
    run_detectors,
)
from otel_compaction.detectors.ineffective import refilled_compaction
from otel_compaction.lineage import LineageTracker
from otel_compaction.lineage.rediscovery import RediscoveryTracker, resolve_keys
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    CompactionRecord,
    Finding,
    PhaseEstimate,
    PhaseReport,
    Pressure,
    Rediscovery,
    RediscoveryBaseline,
    SummarizerCost,
    TurnAnalysis,
    TurnObservation,
)
from otel_compaction.semconv import CompactionMode, FindingKind
from otel_compaction.signals.phase import PhaseTracker
from otel_compaction.signals.pressure import PressureTracker
from otel_compaction.signals.tools import ToolCategory, parse_category
from otel_compaction.signals.windows import context_window

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
FindingListener = Callable[[Finding], None]

_MAX_PARSED = 256
_parsed_categories: BoundedMap[str, ToolCategory | None] = BoundedMap(_MAX_PARSED)
_CATEGORY_VALUES: Final = {category: category.value for category in ToolCategory}
_category_values_cache: BoundedMap[tuple[ToolCategory, ...], tuple[str, ...]] = BoundedMap(
    _MAX_PARSED
)


@dataclasses.dataclass(frozen=True, slots=True)
class AnalyzerSetup:
    """What the analyzers of one registry share (one object, where five slots on each of
    100,000 analyzers cost 4 MB): settings, detectors split by :func:`split_detectors`,
    clock and finding listener."""

    settings: Settings
    detectors: tuple[Detector, ...]
    """Run on observation."""
    later: tuple[Detector, ...]
    """Run on settlement (``needs_size_after``)."""
    clock: Clock
    on_finding: FindingListener | None

    @classmethod
    def of(
        cls,
        settings: Settings,
        detectors: Sequence[Detector],
        clock: Clock,
        on_finding: FindingListener | None,
    ) -> AnalyzerSetup:
        """The setup of analyzers built with these arguments."""
        return cls(settings, *split_detectors(tuple(detectors)), clock, on_finding)


_PHASE_KNOWN: Final = 1
_COMPACTED_PENDING: Final = 2


class _Flag:
    """A boolean kept as one bit of the analyzer's ``_flags``: four booleans in one slot
    (24 bytes less for each of 100,000 conversations)."""

    __slots__ = ("bit",)

    def __init__(self, bit: int) -> None:
        self.bit = bit

    def __get__(self, analyzer: Any, owner: Any = None) -> bool:
        return bool(analyzer._flags & self.bit)

    def __set__(self, analyzer: Any, value: bool) -> None:
        flags = analyzer._flags
        analyzer._flags = flags | self.bit if value else flags & ~self.bit


class ConversationAnalyzer:
    """Signals, lineage and findings of one conversation.

    Args:
        conversation_id: the conversation's id (``compaction.conversation.id``).
        settings: thresholds and bounds.
        detectors: the rules run on every compaction.
        clock: seconds, monotonic; used for idle expiry.
        on_finding: called with each finding after the call that raised it
            (outside this analyzer's lock).
        lock: the lock that serialises this analyzer's calls (a registry passes
            one shared by a stripe of its analyzers); a new one when omitted.
        setup: what the analyzers of a registry share; when given, it replaces
            ``settings``, ``detectors``, ``clock`` and ``on_finding``.
    """

    __slots__ = (
        "_first",
        "_fixed",
        "_flags",
        "_floor",
        "_lineage",
        "_lock",
        "_phase_since",
        "_phase_tracker",
        "_pressure_tracker",
        "_rediscovery",
        "_setup",
        "_summarizer",
        "_turn_index",
        "_unsettled",
        "conversation_id",
        "last_seen",
        "mark",
        "mark_ns",
    )

    STATE_FIELDS: ClassVar = (
        "compacted_pending",
        "first",
        "fixed",
        "floor",
        "judged_ineffective",
        "lineage",
        "livelocked",
        "phase_known",
        "phase_since",
        "phase_tracker",
        "pressure_tracker",
        "rediscovery",
        "summarizer",
        "turn_index",
        "unsettled",
    )
    """The names of :meth:`state`'s values: everything but the id, the idle clock and what
    the constructor derives (settings, detectors, clock, listener, lock)."""

    _phase_known = _Flag(_PHASE_KNOWN)
    """Whether a turn or a report made the phase known."""
    _compacted_pending = _Flag(_COMPACTED_PENDING)
    """Whether a compaction came since the last turn (the next turn says so)."""
    _livelocked = _Flag(4)
    _judged_ineffective = _Flag(8)
    """Whether the last compaction was flagged ineffective already (no hindsight then)."""

    def __init__(
        self,
        conversation_id: str,
        settings: Settings | None = None,
        *,
        detectors: Sequence[Detector] = DEFAULT_DETECTORS,
        clock: Clock = time.monotonic,
        on_finding: FindingListener | None = None,
        lock: AbstractContextManager[Any] | None = None,
        setup: AnalyzerSetup | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        if setup is None:
            setup = AnalyzerSetup.of(settings or Settings.from_env(), detectors, clock, on_finding)
        self._setup = setup
        self._lock = lock if lock is not None else threading.Lock()
        self._pressure_tracker = PressureTracker(setup.settings)
        self._phase_tracker = PhaseTracker(setup.settings)
        self._lineage = LineageTracker(conversation_id, setup.settings)
        self._turn_index = 0
        self._flags = 0
        self._phase_since = 0
        self._floor: int | None = None
        self._fixed: int | None = None
        self._unsettled: tuple[FindingKind, ...] | None = None
        """The kinds found on a compaction waiting for the first call after it."""
        self._summarizer: SummarizerCost | None = None
        """The summarizer's calls since the last turn, for the compaction reported next."""
        self._rediscovery: RediscoveryTracker | None = None
        """Made on the first call whose tools' inputs are known (lineage.rediscovery)."""
        self._first: str | tuple[str, Pressure] | None = None
        """The first compaction's id (and the pressure it fired in, when that changes what
        the rules read), while a run that ended now would draw a finding from the rules
        judged at its end (a short run): what ``end_run`` judges."""
        self.last_seen = setup.clock()
        self.mark = 0
        """The owner's turn mark (the processor's: the highest turn index it applied to this
        conversation, 0 for none); the engine never reads it, nor keeps it in :meth:`state`."""
        self.mark_ns = 0
        """The start (ns since the epoch) of the turn at :attr:`mark` (0: unknown)."""

    # ----------------------------------------------------------------- state

    @property
    def settings(self) -> Settings:
        """The thresholds and bounds this analyzer judges by."""
        return self._setup.settings

    def state(self) -> dict[str, Any]:
        """What the analyzer knows of its conversation, as plain values (its trackers' as
        their own ``state()``): a processor's snapshot writes it, :meth:`restore` takes it."""
        with self._lock:
            rediscovery = self._rediscovery
            return {
                "compacted_pending": self._compacted_pending,
                "first": self._first,
                "fixed": self._fixed,
                "floor": self._floor,
                "judged_ineffective": self._judged_ineffective,
                "lineage": self._lineage.state(),
                "livelocked": self._livelocked,
                "phase_known": self._phase_known,
                "phase_since": self._phase_since,
                "phase_tracker": self._phase_tracker.state(),
                "pressure_tracker": self._pressure_tracker.state(),
                "rediscovery": None if rediscovery is None else rediscovery.state(),
                "summarizer": self._summarizer,
                "turn_index": self._turn_index,
                "unsettled": self._unsettled,
            }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take what :meth:`state` returned, on an analyzer of the same id and settings
        (``KeyError``, ``TypeError`` or ``ValueError`` for a state that is not one)."""
        with self._lock:
            self._lineage.restore(state["lineage"])
            self._phase_tracker.restore(state["phase_tracker"])
            self._pressure_tracker.restore(state["pressure_tracker"])
            found = state["rediscovery"]
            tracker = None
            if found is not None:
                tracker = RediscoveryTracker(self._setup.settings.rediscovery_horizon)
                tracker.restore(found)
            self._rediscovery = tracker
            self._compacted_pending, self._first, self._fixed, self._floor = (
                state["compacted_pending"], state["first"], state["fixed"], state["floor"]
            )  # fmt: skip
            self._judged_ineffective, self._livelocked = (
                state["judged_ineffective"], state["livelocked"]
            )  # fmt: skip
            self._phase_known, self._phase_since = state["phase_known"], state["phase_since"]
            self._summarizer, self._turn_index = state["summarizer"], state["turn_index"]
            self._unsettled = state["unsettled"]

    @property
    def turn_index(self) -> int:
        """The number of turns observed so far (the last turn's 1-based index)."""
        return self._turn_index

    @property
    def compactions(self) -> tuple[CompactionRecord, ...]:
        """The remembered compactions, oldest first (bounded)."""
        with self._lock:
            return self._lineage.records

    def knows_compaction(self, compaction_id: str) -> bool:
        """Whether ``compaction_id`` is among the remembered compactions (without building
        them, as :attr:`compactions` does: settled ones are kept packed)."""
        with self._lock:
            return self._lineage.knows(compaction_id)

    @property
    def livelocked(self) -> bool:
        """Whether the conversation is in re-expansion livelock.

        Set by a ``reexpansion_livelock`` finding; cleared by a later compaction
        that is not flagged and either starts a new lineage or comes after a
        longer interval than the one before it (the cadence recovered).
        """
        return self._livelocked

    @property
    def pressure(self) -> Pressure | None:
        """The pressure after the last turn, None before the first."""
        with self._lock:
            return self._pressure_tracker.last

    @property
    def context_tokens(self) -> int | None:
        """``pressure.context_tokens`` without building the pressure; None before the first
        turn."""
        with self._lock:
            return self._pressure_tracker.context_tokens

    @property
    def phase(self) -> PhaseEstimate | None:
        """The current phase, reports included; None until a turn or a report."""
        with self._lock:
            return self._phase_tracker.current if self._phase_known else None

    @property
    def phase_turns(self) -> int:
        """How many turns the current most likely phase has lasted (0 before any turn)."""
        return self._turn_index - self._phase_since if self._turn_index else 0

    @property
    def rediscovery_baseline(self) -> RediscoveryBaseline | None:
        """The conversation's own rediscovery at ordinary points; None when its calls'
        inputs are unknown (docs/concepts.md#rediscovery)."""
        tracker = self._rediscovery
        return None if tracker is None else tracker.baseline

    def is_known_summary(self, text: str) -> str | None:
        """The id of the compaction whose summary ``text`` is (or contains), if any."""
        with self._lock:
            return self._lineage.is_known_summary(text)

    # ----------------------------------------------------------------- input

    def report_phase(self, report: PhaseReport) -> PhaseEstimate:
        """Take the agent's own statement of its phase (any time)."""
        with self._lock:
            self.last_seen = self._setup.clock()
            self._phase_known = True
            return self._phase_tracker.report(report)

    def observe_summarizer(self, cost: SummarizerCost) -> None:
        """Take the cost of a summarizer call made for the compaction about to be reported
        (Claude Code's ``query_source="compact"`` request): not a turn. It goes on the
        next compaction observed; a turn that comes first ends its claim (the compaction
        it was for was never reported)."""
        with self._lock:
            self.last_seen = self._setup.clock()
            pending = self._summarizer
            self._summarizer = cost if pending is None else pending.plus(cost)

    def observe_turn(self, obs: TurnObservation) -> TurnAnalysis:
        """Account one LLM call and return its signals (and the compaction it settled)."""
        with self._lock:
            analysis = self._turn(obs)
        if analysis.settled is not None:
            self._notify(analysis.settled.findings)
        return analysis

    def _turn(self, obs: TurnObservation) -> TurnAnalysis:
        self.last_seen = self._setup.clock()
        self._summarizer = None
        settled = None
        if self._unsettled is not None and obs.context_tokens > 0:
            # A call of unknown size (0) cannot settle it: the next one will.
            settled = self._settle(self._unsettled, obs.context_tokens, obs)
        turn = self._turn_index = self._turn_index + 1
        context_tokens = obs.context_tokens
        window = obs.window or context_window(obs.model, self._setup.settings)
        pressure = self._pressure_tracker.observe(context_tokens, window, obs.tool_output_tokens)
        categories = self._categories(obs)
        phase_tracker = self._phase_tracker
        phase = phase_tracker.observe_categories(categories, turn)
        self._flags |= _PHASE_KNOWN  # the _Flags' bits inline here: every turn
        transition = phase_tracker.last_transition
        if transition is not None or turn == 1:
            self._phase_since = turn - 1
        self._lineage.observe_turn(turn, context_tokens, obs.new_content_tokens)
        if context_tokens > 0 and (self._floor is None or context_tokens < self._floor):
            self._floor = context_tokens
        if obs.fixed_tokens is not None:
            self._fixed = obs.fixed_tokens
        if self._first is not None and turn >= self._setup.settings.short_run_turns:
            self._first = None  # the run is no short run, whatever comes
        flags = self._flags
        compacted = bool(flags & _COMPACTED_PENDING)
        self._flags = flags & ~_COMPACTED_PENDING
        return TurnAnalysis(
            self.conversation_id,
            turn,
            pressure,
            phase,
            transition,
            compacted,
            _category_values(categories),
            settled,
            self._rediscover(turn, obs),
        )

    def _rediscover(self, turn: int, obs: TurnObservation) -> tuple[Rediscovery, ...]:
        tracker = self._rediscovery
        if tracker is None:
            # Calls known only by name (a span without their inputs) would all look alike.
            if not any(obs.tool_keys) and not any(a is not None for a in obs.tool_arguments):
                return ()
            tracker = self._rediscovery = RediscoveryTracker(self.settings.rediscovery_horizon)
        keys = resolve_keys(obs.tool_calls, obs.tool_arguments, obs.tool_keys)
        return tracker.observe_turn(turn, obs.tool_calls, keys, obs.tool_output_tokens)

    def _categories(self, obs: TurnObservation) -> tuple[ToolCategory, ...]:
        # Categories read back from a span win: the arguments that decided them
        # (a bash call running pytest) are not on the span.
        calls = obs.tool_calls
        if obs.tool_categories and len(obs.tool_categories) == len(calls):
            parsed = tuple(map(_parse_category, obs.tool_categories))
            if None not in parsed:
                return parsed  # type: ignore[return-value]  # None was just ruled out
        if not calls:
            return ()
        return self._phase_tracker.categories(calls, obs.tool_arguments)

    def observe_compaction(self, obs: CompactionObservation) -> CompactionAnalysis:
        """Record a compaction, run the detectors, and return the analysis."""
        with self._lock:
            analysis = self._compaction(obs)
        if analysis.settled is not None:
            self._notify(analysis.settled.findings)
        self._notify(analysis.findings)
        return analysis

    def _compaction(self, obs: CompactionObservation) -> CompactionAnalysis:
        self.last_seen = self._setup.clock()
        if obs.summarizer is None and self._summarizer is not None:
            obs = dataclasses.replace(obs, summarizer=self._summarizer)
        self._summarizer = None
        previous = None
        if self._unsettled is not None:  # no call came between: it is judged as it is
            previous = self._settle(self._unsettled, None)
        history = self._lineage.history()
        pressure = self._pressure_tracker.last
        window = pressure.window if pressure else None
        if window is None:
            window = context_window(None, self._setup.settings)
        if obs.fixed_tokens is not None:
            self._fixed = obs.fixed_tokens  # the part the source judged it against
        record = self._lineage.observe_compaction(obs, window=window, fixed_tokens=self._fixed)
        phase = self._phase_tracker.current if self._phase_known else None
        ctx = DetectionContext(
            record=record,
            settings=self._setup.settings,
            history=history,
            pressure=pressure,
            phase=phase,
            compacted_tokens=record.compacted_tokens,
            floor_tokens=self._floor,
            fixed_tokens=self._fixed,
        )
        findings = run_detectors(ctx, self._setup.detectors)
        if not history:
            self._first = self._kept_for_end(ctx)
        self._unsettled = None
        if record.settled:
            later = run_detectors(ctx, self._setup.later, exclude=_kinds(findings))
            findings = (*findings, *later)
        else:
            # Only the kinds found are kept: what the later rules read (the records, the
            # pressure and sizes before the compaction) is still here when the next turn comes.
            self._unsettled = tuple(f.kind for f in findings)
        if previous is None:
            previous = self._hindsight(record, history)
        self._judged_ineffective = _ineffective(findings)
        self._update_livelock(record, history, findings)
        self._compacted_pending = True
        if self._rediscovery is not None:
            self._rediscovery.observe_compaction(record.compaction_id, self._turn_index + 1)
        if obs.mode is CompactionMode.PRUNE:
            self._pressure_tracker.clear()  # the pruned tool outputs no longer weigh
        return CompactionAnalysis(record, pressure, phase, findings, previous)

    def finish(self) -> CompactionAnalysis | None:
        """Judge a compaction no call followed (the end of a transcript), its size after
        unknown; returns what that added, or None when nothing was waiting."""
        with self._lock:
            pending = self._unsettled
            analysis = None if pending is None else self._settle(pending, None)
        if analysis is not None:
            self._notify(analysis.findings)
        return analysis

    def finish_rediscovery(self) -> tuple[Rediscovery, ...]:
        """The end of the conversation: the open horizons of its compactions, cut short."""
        with self._lock:
            tracker = self._rediscovery
            return () if tracker is None else tracker.finish(self._turn_index)

    def end_run(self) -> CompactionAnalysis | None:
        """Judge the run now that it has ended (the end of a transcript, the instrumentation
        closing): the rules that need its length (``needs_run_end``: a short run) judge its
        first compaction once more. Returns what they found, as a ``hindsight`` analysis of
        that compaction, or None. Call it after :meth:`finish`."""
        with self._lock:
            analysis = self._end_run()
        if analysis is not None:
            self._notify(analysis.findings)
        return analysis

    def _kept_for_end(self, ctx: DetectionContext) -> str | tuple[str, Pressure] | None:
        """What ``end_run`` needs of the first compaction: None when the run-end rules would
        not flag it even if the run ended now (the shortest it can be); its id alone when
        the pressure it fired in changes nothing they read (most: a few bytes a
        conversation, for 100,000 of them)."""
        now = dataclasses.replace(ctx, run_turns=ctx.record.turn_index)
        found = run_detectors(now, self._run_end_detectors())
        if not found:
            return None
        cid = ctx.record.compaction_id
        if ctx.pressure is None:
            return cid
        bare = run_detectors(dataclasses.replace(now, pressure=None), self._run_end_detectors())
        return cid if bare == found else (cid, ctx.pressure)

    def _run_end_detectors(self) -> list[Detector]:
        return [d for d in self._setup.detectors if needs_run_end(d)]

    def _end_run(self) -> CompactionAnalysis | None:
        first, self._first = self._first, None
        if first is None:
            return None
        cid, pressure = (first, None) if isinstance(first, str) else first
        record = next((r for r in self._lineage.records if r.compaction_id == cid), None)
        if record is None:
            return None  # forgotten (more compactions than the records kept): not judged
        ctx = DetectionContext(
            record=record,
            settings=self._setup.settings,
            pressure=pressure,
            compacted_tokens=record.compacted_tokens,
            run_turns=self._turn_index,
        )
        findings = run_detectors(ctx, self._run_end_detectors())
        if not findings:
            return None
        return CompactionAnalysis(record, pressure, None, findings, hindsight=True)

    def _settle(
        self,
        found: tuple[FindingKind, ...],
        context_after: int | None,
        call: TurnObservation | None = None,
    ) -> CompactionAnalysis | None:
        """Judge the unsettled compaction now that the first call after it is known (before
        that call is accounted: the state is still the one the compaction fired in)."""
        self._unsettled = None
        last = self._lineage.last
        if call is not None and last is not None:
            self._measure_fixed(last, call)
        history = self._lineage.records[:-1]  # before the settlement packs the record
        settle = self._lineage.settle
        record = last if context_after is None else settle(context_after, self._fixed)
        if record is None:
            return None
        pressure = self._pressure_tracker.last
        ctx = DetectionContext(
            record=record,
            settings=self._setup.settings,
            history=history,
            pressure=pressure,
            floor_tokens=self._floor,
            fixed_tokens=self._fixed,
        )
        findings = run_detectors(ctx, self._setup.later, exclude=frozenset(found))
        self._judged_ineffective = FindingKind.INEFFECTIVE_COMPACTION in found or _ineffective(
            findings
        )
        self._update_livelock(record, ctx.history, findings)
        return CompactionAnalysis(record, pressure, None, findings)

    def _measure_fixed(self, record: CompactionRecord, call: TurnObservation) -> None:
        """After a compaction that rewrote the history, the prompt cache still matches only
        what comes before the history: the system prompt and tool definitions. The first
        call's cache read is that fixed part, measured (when no source reports it)."""
        cached = call.cache_read_tokens
        if call.fixed_tokens is not None or cached is None or cached <= 0:
            return
        if record.failed or record.mode is CompactionMode.PRUNE:
            return  # the history was not rewritten: the cache still holds part of it
        self._fixed = cached

    def _hindsight(
        self, record: CompactionRecord, history: tuple[CompactionRecord, ...]
    ) -> CompactionAnalysis | None:
        """The previous compaction judged again by how soon ``record`` followed it: one that
        bought fewer than ``ineffective_min_turns`` calls bought nothing (``refilled``)."""
        if not history or self._judged_ineffective:
            return None
        if not any(d.kind is FindingKind.INEFFECTIVE_COMPACTION for d in self._setup.later):
            return None  # the rule is not among this analyzer's detectors
        earlier = history[-1]
        ctx = DetectionContext(
            record=earlier,
            settings=self._setup.settings,
            history=history[:-1],
            pressure=self._pressure_tracker.last,
            floor_tokens=self._floor,
            fixed_tokens=self._fixed,
        )
        finding = refilled_compaction(ctx, record)
        if finding is None:
            return None
        return CompactionAnalysis(earlier, ctx.pressure, None, (finding,), hindsight=True)

    def _update_livelock(
        self,
        record: CompactionRecord,
        history: tuple[CompactionRecord, ...],
        findings: tuple[Finding, ...],
    ) -> None:
        if any(f.kind is FindingKind.REEXPANSION_LIVELOCK for f in findings):
            self._livelocked = True
            return
        if not self._livelocked or not record.settled:
            return  # an unsettled compaction may still be found in livelock
        previous = history[-1].cycle if history else None
        recovered = (
            record.cycle is not None
            and previous is not None
            and record.cycle.interval_turns > previous.interval_turns
        )
        if record.parent_id is None or recovered:
            self._livelocked = False

    def _notify(self, findings: tuple[Finding, ...]) -> None:
        if self._setup.on_finding is None:
            return
        for finding in findings:
            self._setup.on_finding(finding)


def split_detectors(
    detectors: tuple[Detector, ...],
) -> tuple[tuple[Detector, ...], tuple[Detector, ...]]:
    """The detectors run on observation and those run on settlement, shared by the analyzers
    of a registry (two tuples per analyzer would cost 100,000 conversations 20 MB)."""
    try:
        return _split(detectors)
    except TypeError:  # an unhashable detector of the user's: split it for this analyzer
        return _split.__wrapped__(detectors)


@functools.lru_cache(maxsize=16)
def _split(detectors: tuple[Detector, ...]) -> tuple[tuple[Detector, ...], tuple[Detector, ...]]:
    return (
        tuple(d for d in detectors if not needs_size_after(d)),
        tuple(d for d in detectors if needs_size_after(d)),
    )


def _kinds(findings: tuple[Finding, ...]) -> frozenset[FindingKind]:
    return frozenset(f.kind for f in findings)


def _ineffective(findings: tuple[Finding, ...]) -> bool:
    return any(f.kind is FindingKind.INEFFECTIVE_COMPACTION for f in findings)


def _parse_category(value: str) -> ToolCategory | None:
    """:func:`parse_category`, cached: spans repeat a handful of category names."""
    return _parsed_categories.cached(value, parse_category)


def _category_values(categories: tuple[ToolCategory, ...]) -> tuple[str, ...]:
    """The categories' values, cached: a turn's calls fall into a handful of combinations."""
    return _category_values_cache.cached(categories, _values_of)


def _values_of(categories: tuple[ToolCategory, ...]) -> tuple[str, ...]:
    return tuple(map(_CATEGORY_VALUES.__getitem__, categories))
