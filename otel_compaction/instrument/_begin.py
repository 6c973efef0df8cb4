"""The start of one instrumented call: request, conversation, history, span.

The conversation is the one the application named (``conversation()``, an
argument, the LangChain thread, OTel baggage), the client's or provider's own
(anthropic ``conversation_id`` option, OpenAI ``conversation=``), the chain's
(``previous_response_id``), or else the one the history tracker infers.
"""

from __future__ import annotations

from typing import Any

from otel_compaction.inference.history import Placement
from otel_compaction.inference.messages import describe
from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._ambient import new_conversation_id
from otel_compaction.instrument._api import ProviderApi, RequestInfo
from otel_compaction.instrument._call import InferenceCall
from otel_compaction.instrument._framework import FrameworkCall
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import CompactionBlock, ConversationRef
from otel_compaction.instrument._spans import foreign_inference_span, start_inference_span
from otel_compaction.semconv import ConversationIdSource


def begin(
    runtime: Runtime, api: ProviderApi, instance: Any, kwargs: dict[str, Any]
) -> InferenceCall | None:
    """Start instrumenting one call, or None (the call then runs uninstrumented)."""
    try:
        request = api.request(instance, kwargs)
        compacting = scope.compacting()
        framework = scope.framework_call()
        internal = compacting is not None or (framework is not None and framework.internal)
        conversation, placement = _place(runtime, request, internal, compacting, framework)
        summarized = placement is not None and placement.summarizer
        internal = internal or summarized
        if conversation is not None and not internal:
            scope.note_conversation(conversation.id)
        foreign = foreign_inference_span(runtime)
        ids = conversation.attributes() if conversation is not None else {}
        if foreign is not None:
            foreign.set_attributes(ids)
        span = foreign or start_inference_span(runtime, request, ids)
        queue = None if internal else scope.pending()
        return InferenceCall(
            runtime,
            request,
            conversation,
            placement,
            span,
            owns_span=foreign is None,
            internal=internal,
            summarized=summarized,
            framework=framework,
            pending=queue.claim() if queue is not None else (),
        )
    except Exception:  # noqa: BLE001 - never break the host: the call runs uninstrumented
        runtime.guard.failed("request")
        return None


def _given(
    runtime: Runtime, request: RequestInfo, framework: FrameworkCall | None
) -> ConversationRef | None:
    given = scope.given_conversation(framework=framework)
    if given is None and request.conversation_hint:
        given = ConversationRef(request.conversation_hint, ConversationIdSource.CLIENT, True)
    if given is None and request.previous_response_id:
        chained = runtime.response_conversations.get(request.previous_response_id)
        if chained is not None:
            given = ConversationRef(chained[0], ConversationIdSource.CHAINED, chained[1])
    return given


def _place(
    runtime: Runtime,
    request: RequestInfo,
    internal: bool,
    compacting: CompactionBlock | None,
    framework: FrameworkCall | None,
) -> tuple[ConversationRef | None, Placement | None]:
    given = _given(runtime, request, framework)
    if internal:
        if given is None and compacting is not None:
            given = compacting.conversation_ref(runtime, request)
        elif given is None and framework is not None and request.messages is not None:
            # A framework's summarization hook that names no conversation: the one the
            # summarizer's request draws on (inference.summarizer), remembered nowhere.
            placement = runtime.history.place(
                None, request.system, request.messages, request.model, summarizer=True
            )
            return ConversationRef(
                placement.conversation_id, ConversationIdSource.INFERRED, False
            ), placement
        return given, None
    if request.messages is None:
        if given is None:
            given = ConversationRef(new_conversation_id(), ConversationIdSource.INFERRED, False)
        facts = tuple(describe(item) for item in request.new_items)
        chars = sum(f.chars for f in facts)
        return given, Placement(given.id, not given.given, facts, context_chars=chars)
    placement = runtime.history.place(
        given.id if given is not None else None,
        request.system,
        request.messages,
        request.model,
        tools=request.tools,
    )
    if given is None:
        given = ConversationRef(placement.conversation_id, ConversationIdSource.INFERRED, False)
    return given, placement
