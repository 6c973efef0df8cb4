"""The LangChain runs in flight, and the conversation each belongs to.

A run's conversation is, first match wins:

1. an enclosing ``with conversation(...)`` block (the SDK layer gives it the
   same precedence, so both layers always agree);
2. the thread the application named in the run's metadata (LangGraph copies
   ``configurable.thread_id`` there; LangSmith's ``conversation_id`` and
   ``session_id`` keys count too);
3. the conversation of its parent run;
4. another id the application gave (OTel baggage ``gen_ai.conversation.id``);
5. the id of the outermost run: inferred, never ``gen_ai.conversation.id``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage

from otel_compaction._bounded import BoundedMap
from otel_compaction.instrument._framework import FrameworkCall
from otel_compaction.instrument._scope import ConversationRef, given_conversation
from otel_compaction.instrument.langchain._scan import InputScan
from otel_compaction.instrument.langchain._telemetry import ChatCall
from otel_compaction.semconv import ConversationIdSource

THREAD_KEYS = ("thread_id", "conversation_id", "session_id")
"""Run-metadata keys naming the conversation, in order of preference."""
RUN_MEMORY = 10_000
"""Runs tracked at once; a run whose end never comes is forgotten past this."""

AmbientConversation = Callable[[], ConversationRef | None]
"""Where the ids the application gave outside LangChain come from (``given_conversation``)."""


class RunKind(Enum):
    """What kind of LangChain run a record tracks."""

    CHAIN = "chain"
    CHAT = "chat"
    TOOL = "tool"


@dataclass(slots=True)
class Run:
    """One LangChain run between its start and end callbacks."""

    kind: RunKind
    conversation: ConversationRef
    start_ns: int
    inputs: object = None
    name: str | None = None
    internal: bool = False
    messages: Sequence[BaseMessage] = ()
    scan: InputScan = field(default_factory=InputScan)
    chat: ChatCall | None = None
    call: FrameworkCall | None = None
    token: contextvars.Token[FrameworkCall | None] | None = field(default=None, repr=False)


class RunTable:
    """Runs in flight by run id, bounded (oldest forgotten first)."""

    __slots__ = ("_ambient", "_runs")

    def __init__(self, ambient: AmbientConversation = given_conversation) -> None:
        self._runs: BoundedMap[UUID, Run] = BoundedMap(RUN_MEMORY)
        self._ambient = ambient

    def add(self, run_id: UUID, run: Run) -> None:
        """Track ``run`` until its end."""
        self._runs.put(run_id, run)

    def pop(self, run_id: UUID) -> Run | None:
        """Stop tracking a run and return it (None if unknown)."""
        return self._runs.pop(run_id)

    def __len__(self) -> int:
        return len(self._runs)

    def conversation(
        self, run_id: UUID, parent_run_id: UUID | None, metadata: Mapping[str, Any] | None
    ) -> ConversationRef:
        """The conversation of a starting run (see the module docstring)."""
        ambient = self._ambient()
        if ambient is not None and ambient.source == ConversationIdSource.EXPLICIT:
            return ambient
        for key in THREAD_KEYS:
            value = (metadata or {}).get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return ConversationRef(str(value), ConversationIdSource.FRAMEWORK, True)
        parent = self._runs.peek(parent_run_id) if parent_run_id is not None else None
        if parent is not None:
            return parent.conversation
        if ambient is not None:
            return ambient
        return ConversationRef(str(parent_run_id or run_id), ConversationIdSource.INFERRED, False)
