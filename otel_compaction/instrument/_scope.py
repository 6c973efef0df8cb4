"""Context-local state: the current conversation, open compaction blocks, pending reports.

Everything here lives in ``contextvars``, so it follows the code into asyncio
tasks and into threads started with a copied context, and two threads or tasks
never see each other's conversation.

Reports that name no conversation (a ``report_phase`` or ``record_compaction``
outside any ``conversation()`` block, in an agent whose conversations are
inferred) wait in a per-context :class:`Pending` list and are claimed by the
next instrumented call made in that context, which knows its conversation.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.trace import Span

from otel_compaction import semconv as sc
from otel_compaction.instrument._framework import FrameworkCall, current_call
from otel_compaction.model import CompactionObservation, PhaseReport

if TYPE_CHECKING:
    from otel_compaction.instrument._api import RequestInfo
    from otel_compaction.instrument._runtime import Runtime

MAX_PENDING = 64


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """A conversation id, where it came from, and whether the application gave it."""

    id: str
    source: sc.ConversationIdSource
    given: bool

    def attributes(self) -> dict[str, Any]:
        """``compaction.conversation.*`` always; ``gen_ai.conversation.id`` only if given."""
        out: dict[str, Any] = {sc.CONVERSATION_ID: self.id, sc.CONVERSATION_ID_SOURCE: self.source}
        if self.given:
            out[sc.GEN_AI_CONVERSATION_ID] = self.id
        return out


@dataclass(slots=True)
class PendingCompaction:
    """An explicit compaction waiting for its conversation (and maybe its open span)."""

    observation: CompactionObservation
    span: Span | None = None
    end_ns: int | None = None


@dataclass(frozen=True, slots=True)
class PendingPhase:
    """A phase report waiting for its conversation."""

    report: PhaseReport


PendingItem = PendingCompaction | PendingPhase


class CompactionBlock(Protocol):
    """An open ``with compaction()`` block (``context.CompactionScope``), as calls inside
    it see it: the conversation its summarizer's calls belong to."""

    def conversation_ref(self, runtime: Runtime, request: RequestInfo) -> ConversationRef | None:
        """The block's conversation; found from the summarizer's request when not given."""
        ...


class Pending:
    """Reports made in one context, for the next instrumented call there (thread-safe)."""

    __slots__ = ("_items", "_lock")

    def __init__(self) -> None:
        self._items: list[PendingItem] = []
        self._lock = threading.Lock()

    def add(self, item: PendingItem, on_drop: Callable[[PendingItem], None]) -> None:
        """Queue ``item``; beyond the bound the oldest is dropped through ``on_drop``."""
        with self._lock:
            self._items.append(item)
            dropped = self._items[:-MAX_PENDING]
            del self._items[:-MAX_PENDING]
        for old in dropped:
            on_drop(old)

    def claim(self) -> list[PendingItem]:
        """Take every queued item (each is claimed once, by one call)."""
        with self._lock:
            items, self._items = self._items, []
        return items


_CONVERSATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_compaction_conversation", default=None
)
_PENDING: contextvars.ContextVar[Pending | None] = contextvars.ContextVar(
    "otel_compaction_pending", default=None
)
_COMPACTING: contextvars.ContextVar[CompactionBlock | None] = contextvars.ContextVar(
    "otel_compaction_compacting", default=None
)
_LAST_CONVERSATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_compaction_last_conversation", default=None
)
"""The conversation of the latest instrumented call made in this context (for ``advise()``)."""
_IN_CALL = otel_context.create_key("otel_compaction-in-call")
"""Marks the OTel context inside an instrumented call: set in the same context, and by the
same attach, as the call's span (one attach and one detach per call)."""


def set_conversation(conversation_id: str | None) -> contextvars.Token[str | None]:
    """Make ``conversation_id`` current; reset with the returned token."""
    return _CONVERSATION.set(conversation_id)


def reset_conversation(token: contextvars.Token[str | None]) -> None:
    """Undo :func:`set_conversation` (harmless in another context)."""
    with contextlib.suppress(ValueError):
        _CONVERSATION.reset(token)


def note_conversation(conversation_id: str) -> None:
    """Remember ``conversation_id`` as this context's latest conversation."""
    _LAST_CONVERSATION.set(conversation_id)


def last_conversation() -> str | None:
    """The conversation of the latest instrumented call made in this context, if any."""
    return _LAST_CONVERSATION.get()


def pending() -> Pending | None:
    """This context's pending list, if anything was ever queued here."""
    return _PENDING.get()


def pending_queue() -> Pending:
    """This context's pending list, created on first use."""
    queue = _PENDING.get()
    if queue is None:
        queue = Pending()
        _PENDING.set(queue)
    return queue


def compacting() -> CompactionBlock | None:
    """The ``with compaction()`` block open in this context, if any."""
    return _COMPACTING.get()


def set_compacting(scope: CompactionBlock) -> contextvars.Token[CompactionBlock | None]:
    """Mark ``scope`` as the open compaction block."""
    return _COMPACTING.set(scope)


def reset_compacting(token: contextvars.Token[CompactionBlock | None]) -> None:
    """Close the compaction block (harmless in another context)."""
    with contextlib.suppress(ValueError):
        _COMPACTING.reset(token)


def in_call() -> bool:
    """Whether an instrumented call is running in this context (re-entrancy guard)."""
    return bool(otel_context.get_value(_IN_CALL))


def call_context(span: Span | None) -> otel_context.Context:
    """The current context marked as inside an instrumented call, ``span`` current in it
    (when given: the call's own span), for the caller to attach around the SDK call."""
    marked = otel_context.set_value(_IN_CALL, True)
    return marked if span is None else trace.set_span_in_context(span, marked)


class _LookUp(Enum):
    """The framework call not given: :func:`given_conversation` looks it up itself."""

    LOOK_UP = "look up"


def given_conversation(
    argument: str | None = None,
    *,
    framework: FrameworkCall | Literal[_LookUp.LOOK_UP] | None = _LookUp.LOOK_UP,
) -> ConversationRef | None:
    """The conversation the application named: argument, ``conversation()`` block, the
    framework run (``framework``: :func:`framework_call`, when the caller has it), baggage."""
    if argument:
        return ConversationRef(argument, sc.ConversationIdSource.EXPLICIT, True)
    current = _CONVERSATION.get()
    if current:
        return ConversationRef(current, sc.ConversationIdSource.EXPLICIT, True)
    if framework is _LookUp.LOOK_UP:
        framework = current_call()
    if framework is not None and framework.conversation_id:
        return ConversationRef(
            framework.conversation_id, sc.ConversationIdSource.FRAMEWORK, framework.id_given
        )
    value = baggage.get_baggage(sc.GEN_AI_CONVERSATION_ID)
    if isinstance(value, str) and value:
        return ConversationRef(value, sc.ConversationIdSource.BAGGAGE, True)
    return None


def framework_call() -> FrameworkCall | None:
    """The framework's (LangChain's) chat-model run around this call, if any."""
    return current_call()
