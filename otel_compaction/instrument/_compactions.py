"""The compactions one call reveals, observed in order and emitted as spans.

First the explicit reports waiting in the call's context, then the compaction
inferred from its rewritten history, then the provider's own (Anthropic
compaction blocks and context edits, OpenAI compaction items and cache
diagnostics). Each is skipped when another report already accounts for it.

The call is read through :class:`RevealingCall`, the few values of it this needs
(``_call.InferenceCall`` has them), so this module does not import the one that
calls it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Protocol

from opentelemetry import context as otel_context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from otel_compaction import semconv as sc
from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.inference.history import Placement
from otel_compaction.inference.messages import describe, text_of
from otel_compaction.inference.rewrite import Rewrite
from otel_compaction.instrument._api import RequestInfo, ResponseInfo, ServerCompaction
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import (
    ConversationRef,
    PendingCompaction,
    PendingItem,
    PendingPhase,
)
from otel_compaction.instrument._spans import emit_compaction
from otel_compaction.lineage.text import SURVIVAL_EXTRACTIVE, survival
from otel_compaction.lineage.text import fingerprint as summary_fingerprint
from otel_compaction.model import CompactionObservation
from otel_compaction.semconv import CallUsage, CompactionMode, CompactionSource
from otel_compaction.signals.tokens import estimate_tokens, tokens_for_chars


class RevealingCall(Protocol):
    """What the compactions read of the call that reveals them (an ``InferenceCall``)."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def request(self) -> RequestInfo: ...
    @property
    def conversation(self) -> ConversationRef | None: ...
    @property
    def placement(self) -> Placement | None: ...
    @property
    def internal(self) -> bool: ...
    @property
    def pending(self) -> Sequence[PendingItem]: ...
    @property
    def start_ns(self) -> int: ...
    def parent(self) -> otel_context.Context:
        """A context whose current span is the call's (for compaction spans)."""
        ...


Deferred = tuple[CompactionObservation, ServerCompaction]
"""A provider compaction observed only after the call's own turn (see ``observe_deferred``)."""


def observe_compactions(
    call: RevealingCall, analyzer: ConversationAnalyzer, response: ResponseInfo | None
) -> list[Deferred]:
    """Explicit reports waiting here, the inferred rewrite, the provider's: in that order.

    Returns the provider compactions whose call's usage gives no size
    (``CallUsage.UNKNOWN``): the caller observes them after the call's turn.
    """
    stage = call.runtime.guard.stage(sc.ErrorStage.COMPACTION)
    for item in call.pending:
        with stage:
            if isinstance(item, PendingPhase):
                analyzer.report_phase(item.report)
            elif isinstance(item, PendingCompaction):
                _observe(
                    call,
                    analyzer,
                    item.observation,
                    span=item.span,
                    end_ns=item.end_ns,
                    response=response,
                )
    placement = call.placement
    if placement is not None and placement.rewrite is not None:
        with stage:
            _inferred(call, analyzer, placement.rewrite, placement, response)
    deferred: list[Deferred] = []
    if response is None:
        return deferred
    for server in response.compactions:
        with stage:
            found = _server(call, analyzer, server, response)
            if found is not None:
                deferred.append(found)
    return deferred


def observe_deferred(
    call: RevealingCall, analyzer: ConversationAnalyzer, deferred: Sequence[Deferred]
) -> None:
    """Provider compactions made on the way of a call whose usage may count the context
    before or after them (``CallUsage.UNKNOWN``), observed after that call's turn: the
    next call, whose input is the compacted context, gives their size after, and their
    effectiveness is judged from it, never from the compacting call's usage."""
    for observation, server in deferred:
        with call.runtime.guard.stage(sc.ErrorStage.COMPACTION):
            _observe(call, analyzer, observation, attributes=_usage_attributes(server))
            _remember_opaque(call, server)


def _observe(
    call: RevealingCall,
    analyzer: ConversationAnalyzer,
    observation: CompactionObservation,
    *,
    span: Span | None = None,
    end_ns: int | None = None,
    response: ResponseInfo | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> None:
    after = _context_after(call, response)
    if after is not None and observation.context_after is None:
        observation = dataclasses.replace(observation, context_after=after)
    analysis = analyzer.observe_compaction(observation)
    emit_compaction(
        call.runtime,
        analysis,
        parent=None if span is not None else call.parent(),
        span=span,
        summary=observation.summary_text,
        start_ns=call.start_ns,
        end_ns=end_ns,
        attributes=attributes,
    )
    if observation.summary_text and call.conversation is not None:
        call.runtime.history.remember_summary(call.conversation.id, observation.summary_text)


def _context_after(call: RevealingCall, response: ResponseInfo | None) -> int | None:
    """This call's context, when it is the first call that sees the compacted context:
    every compaction observed here is, but for a pure compaction request (its input
    is the context before) and a call that returned no usage."""
    if response is None or call.request.compaction_call or call.internal:
        return None
    tokens = response.input_tokens
    return tokens if tokens is not None and tokens > 0 else None


def _before_tokens(call: RevealingCall, analyzer: ConversationAnalyzer) -> int | None:
    """The context had it not been compacted: the last turn's plus what is new."""
    if analyzer.pressure is None:
        return None
    new = call.placement.new_facts if call.placement is not None else ()
    return analyzer.pressure.context_tokens + tokens_for_chars(sum(f.chars for f in new))


def _inferred(
    call: RevealingCall,
    analyzer: ConversationAnalyzer,
    rewrite: Rewrite,
    placement: Placement,
    response: ResponseInfo | None,
) -> None:
    summary = "\n".join(t for t in (text_of(m) for m in rewrite.inserted) if t)
    if _already_recorded(analyzer, rewrite, summary):
        return
    before = _before_tokens(call, analyzer)
    if before is None:
        before = tokens_for_chars(
            placement.context_chars - rewrite.inserted_chars + rewrite.dropped_chars
        )
    dropped = tuple(text_of(m) for m in rewrite.dropped)
    retained = tuple(text_of(m) for m in rewrite.retained)
    observation = CompactionObservation(
        source=CompactionSource.INFERRED,
        mode=_inferred_mode(rewrite, _evidence(analyzer, dropped), (summary, *retained)),
        trigger=rewrite.trigger,
        tokens_before=before,
        tokens_after=tokens_for_chars(placement.context_chars),
        summary_tokens=tokens_for_chars(rewrite.inserted_chars) if rewrite.inserted else None,
        retained_tail_tokens=tokens_for_chars(rewrite.retained_chars),
        summary_text=summary or None,
        compacted_texts=dropped,
        retained_texts=retained,
    )
    _observe(call, analyzer, observation, response=response)


def _evidence(analyzer: ConversationAnalyzer, dropped: tuple[str, ...]) -> tuple[str, ...]:
    """What a rewrite dropped, but for earlier summaries of the conversation: a summary
    carried into the new one is lineage (the carry-over measure judges it), not evidence
    kept, and late in a run it is most of the dropped text. When it drops nothing else,
    the turns it summarized were never carried by a call (compacting again one call
    after the last, it took the reply and tool output in unsent): nothing shows them
    kept, so the rewrite is lossy, as is every one whose evidence does not survive."""
    return tuple(t for t in dropped if t and analyzer.is_known_summary(t) is None)


def _inferred_mode(
    rewrite: Rewrite, dropped: tuple[str, ...], kept: tuple[str, ...]
) -> CompactionMode:
    """A summarizing rewrite is extractive only when what it dropped (``dropped``: the
    evidence, earlier summaries left out) survives in the new context (its summary and
    kept messages): lossy however long the verbatim tail."""
    if rewrite.mode is not CompactionMode.LOSSY:
        return rewrite.mode
    kept_share = survival(dropped, kept)
    if kept_share is not None and kept_share >= SURVIVAL_EXTRACTIVE:
        return CompactionMode.EXTRACTIVE
    return CompactionMode.LOSSY


def _server(
    call: RevealingCall,
    analyzer: ConversationAnalyzer,
    server: ServerCompaction,
    response: ResponseInfo,
) -> Deferred | None:
    if not _server_is_new(call, analyzer, server):
        return None
    source = (
        CompactionSource.ANTHROPIC
        if call.request.provider == sc.PROVIDER_ANTHROPIC
        else CompactionSource.OPENAI
    )
    before = server.tokens_before
    if before is None:
        before = (
            response.input_tokens
            if call.request.compaction_call
            else _before_tokens(call, analyzer)
        )
    unknown = server.call_usage is CallUsage.UNKNOWN
    after = server.tokens_after
    if (
        after is None
        and not call.request.compaction_call
        and server.mode is not CompactionMode.PRUNE
        and not unknown
    ):
        after = response.input_tokens
    text = server.summary if server.summary_is_text else None
    observation = CompactionObservation(
        source=source,
        mode=server.mode,
        trigger=server.trigger,
        tokens_before=before,
        tokens_after=after,
        summary_tokens=estimate_tokens(text) if text else None,
        summary_text=text,
        failed=server.failed,
        compaction_id=server.compaction_id,
    )
    if unknown:
        return observation, server
    _observe(call, analyzer, observation, response=response, attributes=_usage_attributes(server))
    _remember_opaque(call, server)
    return None


def _usage_attributes(server: ServerCompaction) -> dict[str, AttributeValue]:
    return {} if server.call_usage is None else {sc.COMPACTION_CALL_USAGE: server.call_usage.value}


def _remember_opaque(call: RevealingCall, server: ServerCompaction) -> None:
    """An opaque compaction item, remembered so the history sending it back is known."""
    if server.summary and not server.summary_is_text and call.conversation is not None:
        call.runtime.history.remember_summary(call.conversation.id, server.summary)


def _server_is_new(
    call: RevealingCall, analyzer: ConversationAnalyzer, server: ServerCompaction
) -> bool:
    """Skip what is already known: re-reported prunes, a cache miss after a known one."""
    cid = call.conversation.id if call.conversation is not None else ""
    if server.mode is CompactionMode.PRUNE:
        if server.cleared is not None and call.runtime.cleared.get(cid) == server.cleared:
            return False
        call.runtime.cleared.put(cid, server.cleared or 0)
        return True
    if server.summary is None and not server.failed:
        records = analyzer.compactions
        return not (records and records[-1].turn_index >= analyzer.turn_index)
    return not (
        server.summary_is_text and server.summary and _known_summary(analyzer, server.summary)
    )


def _known_summary(analyzer: ConversationAnalyzer, text: str) -> bool:
    """Whether exactly this summary was recorded (a summary *containing* an older one is new)."""
    digest = summary_fingerprint(text)
    return any(record.summary_fingerprint == digest for record in analyzer.compactions)


def _already_recorded(analyzer: ConversationAnalyzer, rewrite: Rewrite, summary: str) -> bool:
    """A rewrite that an explicit or provider compaction already accounts for."""
    records = analyzer.compactions
    if records and records[-1].turn_index > analyzer.turn_index:
        return True
    if summary and _known_summary(analyzer, summary):
        return True
    return any(describe(m).summary for m in (*rewrite.inserted, *rewrite.retained[:1]))
