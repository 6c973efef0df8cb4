"""The public API for agents: name the conversation, report phases and compactions.

All optional: without them, conversations are inferred from the histories, the
phase from the tool calls, and compactions from rewritten histories and the
providers' responses. Nothing here ever raises into the agent because of an
internal error (only a programming error in the arguments, such as an unknown
``mode``, raises ``ValueError``).

::

    with conversation("ticket-4711"):
        report_phase("hypothesize", confidence=0.8)
        with compaction(trigger="token_pressure") as c:
            summary = summarize(history)   # an LLM call here is the compaction's cost, not a turn
            c.set_result(summary=summary, tokens_after=count(new_history))
        client.messages.create(...)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_compaction import semconv as sc
from otel_compaction.instrument import _runtime
from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._api import RequestInfo
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import (
    ConversationRef,
    PendingCompaction,
    PendingItem,
    PendingPhase,
)
from otel_compaction.instrument._spans import emit_compaction
from otel_compaction.model import CompactionObservation, PhaseReport
from otel_compaction.semconv import CompactionMode, CompactionSource

__all__ = [
    "CompactionScope",
    "ConversationScope",
    "compaction",
    "conversation",
    "record_compaction",
    "report_phase",
]


class ConversationScope:
    """``with conversation(id):`` (or ``async with``): calls inside belong to ``id``."""

    __slots__ = ("_token", "conversation_id")

    def __init__(self, conversation_id: str) -> None:
        if not isinstance(conversation_id, str) or not conversation_id:
            raise ValueError("conversation id must be a non-empty string")
        self.conversation_id = conversation_id
        self._token: Any = None

    def __enter__(self) -> ConversationScope:
        self._token = scope.set_conversation(self.conversation_id)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            scope.reset_conversation(self._token)
            self._token = None

    async def __aenter__(self) -> ConversationScope:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__(*exc_info)


def conversation(conversation_id: str) -> ConversationScope:
    """Name the conversation of the LLM calls made in this block (threads and tasks alike).

    The id becomes ``gen_ai.conversation.id`` and ``compaction.conversation.id``
    on every span of those calls. Context variables carry it: asyncio tasks
    inherit it; a thread sees it when started with a copied context
    (``contextvars.copy_context().run``, ``asyncio.to_thread``).
    """
    return ConversationScope(conversation_id)


def _drop(item: PendingItem) -> None:
    """A pending compaction never claimed: end its open span as it is."""
    if isinstance(item, PendingCompaction) and item.span is not None:
        item.span.end(end_time=item.end_ns)


def report_phase(
    name: str,
    confidence: float | None = None,
    distribution: Mapping[str, float] | None = None,
    *,
    conversation_id: str | None = None,
) -> None:
    """Tell the analysis the agent's current phase (``explore``, ``hypothesize``, ``patch``...).

    Without a conversation (argument, ``conversation()`` block, baggage), the
    report applies to the next instrumented call made in this context.
    """
    with _runtime.guard().stage(sc.ErrorStage.CONTEXT):
        report = PhaseReport(name, confidence, dict(distribution) if distribution else None)
        ref = scope.given_conversation(conversation_id)
        if ref is None:
            scope.pending_queue().add(PendingPhase(report), _drop)
            return
        _runtime.get_runtime().registry.get(ref.id).report_phase(report)


def _mode(mode: str | CompactionMode) -> CompactionMode:
    try:
        return CompactionMode(mode)
    except ValueError:
        allowed = ", ".join(m.value for m in CompactionMode)
        raise ValueError(f"mode must be one of {allowed}, got {mode!r}") from None


def _observation(mode: str | CompactionMode, fields: Mapping[str, Any]) -> CompactionObservation:
    return CompactionObservation(
        source=CompactionSource.EXPLICIT,
        mode=_mode(mode),
        trigger=fields.get("trigger"),
        tokens_before=fields.get("tokens_before"),
        tokens_after=fields.get("tokens_after"),
        summary_tokens=fields.get("summary_tokens"),
        retained_tail_tokens=fields.get("retained_tail_tokens"),
        summary_text=fields.get("summary"),
        compacted_texts=tuple(fields.get("compacted") or ()),
        retained_texts=tuple(fields.get("retained") or ()),
        parent_id=fields.get("parent_id"),
        continues_lineage=fields.get("continues_lineage"),
        failed=bool(fields.get("failed", False)),
        compaction_id=fields.get("compaction_id"),
        timestamp=time.time(),
    )


def record_compaction(
    *,
    summary: str | None = None,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    mode: str | CompactionMode = CompactionMode.LOSSY,
    trigger: str | None = None,
    summary_tokens: int | None = None,
    retained_tail_tokens: int | None = None,
    compacted: Sequence[str] = (),
    retained: Sequence[str] = (),
    parent_id: str | None = None,
    continues_lineage: bool | None = None,
    failed: bool = False,
    compaction_id: str | None = None,
    conversation_id: str | None = None,
) -> str | None:
    """Record a compaction the agent made itself; returns its id once analysed.

    Args:
        summary: the summary text (kept as a fingerprint; on spans only with
            content capture on).
        tokens_before / tokens_after: context size just before / after.
        mode: ``lossy``, ``extractive``, ``prune`` or ``server``.
        trigger: why it fired (free text).
        compacted / retained: texts of the messages compacted away / kept
            verbatim (an earlier summary among ``compacted`` continues its lineage).
        failed: the summary step failed.
        conversation_id: the conversation; otherwise the ``conversation()``
            block's, or the next instrumented call's in this context (then
            None is returned and the span appears with that call).
    """
    observation = _observation(mode, locals())
    with _runtime.guard().stage(sc.ErrorStage.COMPACTION):
        ref = scope.given_conversation(conversation_id)
        if ref is None:
            scope.pending_queue().add(PendingCompaction(observation), _drop)
            return None
        runtime = _runtime.get_runtime()
        analysis = runtime.registry.get(ref.id).observe_compaction(observation)
        emit_compaction(runtime, analysis, summary=summary)
        if summary:
            runtime.history.remember_summary(ref.id, summary)
        return analysis.record.compaction_id
    return None


class CompactionScope:
    """A ``with compaction(...)`` block: a ``compaction`` span around the agent's own compaction.

    LLM calls made inside (the summarizer) are children of the span and count as
    the compaction's cost, not as turns. Call :meth:`set_result` before the
    block ends; the compaction is analysed when it ends. A block left by an
    exception records no compaction (the context was not replaced) and marks
    the span as failed.
    """

    def __init__(
        self,
        *,
        conversation_id: str | None,
        mode: str | CompactionMode,
        trigger: str | None,
        tokens_before: int | None,
    ) -> None:
        self._mode = _mode(mode)
        self._fields: dict[str, Any] = {"trigger": trigger, "tokens_before": tokens_before}
        self._ref = scope.given_conversation(conversation_id)
        self._span: Span | None = None
        self._tokens: tuple[Any, Any] | None = None
        self.compaction_id: str | None = None
        """The compaction's id once it has been analysed."""

    def set_result(self, **fields: Any) -> None:
        """The compaction's result: ``summary``, ``tokens_after``, ``compacted``, ``retained``,
        ``summary_tokens``, ``retained_tail_tokens``, ``failed``, ``parent_id``,
        ``continues_lineage``, ``compaction_id`` (as for :func:`record_compaction`)."""
        self._fields.update(fields)

    def conversation_ref(self, runtime: Runtime, request: RequestInfo) -> ConversationRef | None:
        """The block's conversation; found from the summarizer's request when not given."""
        if self._ref is None and request.messages is not None:
            found = runtime.history.find(request.system, request.messages)
            if found is not None:
                self._ref = ConversationRef(found, sc.ConversationIdSource.INFERRED, False)
        return self._ref

    def __enter__(self) -> CompactionScope:
        with _runtime.guard().stage(sc.ErrorStage.COMPACTION):
            runtime = _runtime.get_runtime()
            self._span = runtime.tracer.start_span(sc.SPAN_COMPACTION, kind=SpanKind.INTERNAL)
            token = otel_context.attach(trace.set_span_in_context(self._span))
            self._tokens = (token, scope.set_compacting(self))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        end_ns = time.time_ns()
        with _runtime.guard().stage(sc.ErrorStage.COMPACTION):
            if self._tokens is not None:
                token, compacting = self._tokens
                self._tokens = None
                scope.reset_compacting(compacting)
                otel_context.detach(token)
            self._finish(exc, end_ns)

    async def __aenter__(self) -> CompactionScope:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def _finish(self, exc: BaseException | None, end_ns: int) -> None:
        span = self._span
        if exc is not None:
            if span is not None:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                span.set_attribute(sc.SUMMARY_FAILED, True)
                span.end(end_time=end_ns)
            return
        observation = _observation(self._mode, self._fields)
        if self._ref is None:
            scope.pending_queue().add(PendingCompaction(observation, span, end_ns), _drop)
            return
        runtime = _runtime.get_runtime()
        analysis = runtime.registry.get(self._ref.id).observe_compaction(observation)
        self.compaction_id = analysis.record.compaction_id
        emit_compaction(
            runtime, analysis, span=span, summary=observation.summary_text, end_ns=end_ns
        )
        if observation.summary_text:
            runtime.history.remember_summary(self._ref.id, observation.summary_text)


def compaction(
    *,
    mode: str | CompactionMode = CompactionMode.LOSSY,
    trigger: str | None = None,
    tokens_before: int | None = None,
    conversation_id: str | None = None,
) -> CompactionScope:
    """A block in which the agent compacts its context itself (see :class:`CompactionScope`)."""
    return CompactionScope(
        conversation_id=conversation_id, mode=mode, trigger=trigger, tokens_before=tokens_before
    )
