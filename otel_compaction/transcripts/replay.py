"""Feeding a reader's events to the shared engine, in order, one call per event."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from otel_compaction.engine import ConversationRegistry
from otel_compaction.model import CompactionAnalysis, TurnAnalysis
from otel_compaction.transcripts.events import (
    CompactionEvent,
    ConversationInfo,
    Event,
    PhaseEvent,
    TurnEvent,
)


@dataclass(frozen=True, slots=True)
class Step:
    """An event and what the engine said about it (nothing for announcements)."""

    event: Event
    turn: TurnAnalysis | None = None
    compaction: CompactionAnalysis | None = None


class Replayer:
    """Applies events to a :class:`ConversationRegistry`: the live engine, offline.

    The readers already emit each compaction before the first call that sees
    its result, so events are applied as they come.
    """

    __slots__ = ("registry",)

    def __init__(self, registry: ConversationRegistry) -> None:
        self.registry = registry

    def feed(self, event: Event) -> Step:
        """Apply one event and return the engine's answer."""
        if isinstance(event, TurnEvent):
            analyzer = self.registry.get(event.conversation_id)
            return Step(event, turn=analyzer.observe_turn(event.observation))
        if isinstance(event, CompactionEvent):
            analyzer = self.registry.get(event.conversation_id)
            return Step(event, compaction=analyzer.observe_compaction(event.observation))
        if isinstance(event, PhaseEvent):
            self.registry.get(event.conversation_id).report_phase(event.report)
        return Step(event)


class UniqueConversations:
    """Renames a file's conversations whose id an earlier file already used.

    Two files with one session id (a copied or resumed transcript) must not be
    replayed into one conversation: its turns would be counted twice. The later
    file's conversation becomes ``<id>@<file name>``.
    """

    __slots__ = ("_aliases", "_name", "_seen")

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._aliases: dict[str, str] = {}
        self._name = ""

    def start_file(self, name: str) -> None:
        """Begin a new file: its ids may repeat ones of earlier files."""
        self._aliases = {}
        self._name = name

    def rename(self, event: Event) -> Event:
        """The event, with its conversation id made unique across files."""
        if isinstance(event, ConversationInfo):
            cid = event.conversation_id
            if cid in self._seen:
                alias = f"{cid}@{self._name}"
                self._aliases[cid] = alias
                event = dataclasses.replace(event, conversation_id=alias)
            self._seen.add(event.conversation_id)
            return event
        renamed = self._aliases.get(event.conversation_id)
        return event if renamed is None else dataclasses.replace(event, conversation_id=renamed)
