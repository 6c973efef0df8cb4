"""``CompactionCallbackHandler``: LangChain's callbacks into turns and compactions.

What it recognises (see ``_messages`` for the markers and ``_recognize`` for the
observations):

- a ``SummarizationMiddleware`` firing (a chain run whose state update starts with
  ``RemoveMessage("__remove_all__")`` and a summary message), its summarizer call
  (metadata ``lc_source == "summarization"``) read for lineage, not counted as a turn;
- langmem ``RunningSummary`` objects new in a run's output;
- tool results cleared by ``ClearToolUsesEdit`` in a chat model's input (mode ``prune``);
- Anthropic compaction blocks in a ``ChatAnthropic`` response (mode ``server``);
- every other chat-model run as a turn, and tool runs the model did not ask
  for as tool calls of the next turn (phase evidence).

Each callback runs inline (``run_inline``), takes one lock, and never raises
into LangChain: an internal error is logged once per callback and counted in
``compaction.instrumentation.errors`` (stage ``callback``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult

from otel_compaction.engine import ConversationAnalyzer, ConversationRegistry
from otel_compaction.instrument._framework import FrameworkCall, enter_call, exit_call
from otel_compaction.instrument._guard import Guard
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument._scope import ConversationRef, given_conversation
from otel_compaction.instrument.langchain import _callargs as args
from otel_compaction.instrument.langchain import _messages as msg
from otel_compaction.instrument.langchain import _recognize as rec
from otel_compaction.instrument.langchain._runs import AmbientConversation, Run, RunKind, RunTable
from otel_compaction.instrument.langchain._scan import scan_input
from otel_compaction.instrument.langchain._state import ConversationMemories, ConversationMemory
from otel_compaction.instrument.langchain._telemetry import (
    ChatCall,
    LangChainTelemetry,
    current_context,
)
from otel_compaction.model import CompactionObservation
from otel_compaction.semconv import ErrorStage

logger = logging.getLogger("otel_compaction.instrument.langchain")

EXTRA_TOOLS_MEMORY = 32


class CompactionCallbackHandler(BaseCallbackHandler):
    """Records LangChain turns and framework compactions into the compaction engine.

    Args:
        runtime: the instrumentation's runtime (conversation registry, tracer,
            metrics, settings), shared with the SDK layer so that both layers
            feed one conversation and one lineage.
        ambient: ids the application gave outside LangChain (``conversation()``
            blocks, baggage); see ``_runs``.
    """

    run_inline = True  # inline: same context as the model call, and ordered
    raise_error = False

    def __init__(
        self, runtime: Runtime, *, ambient: AmbientConversation = given_conversation
    ) -> None:
        super().__init__()
        self._registry = runtime.registry
        self._telemetry = LangChainTelemetry(runtime)
        self.runtime = runtime
        """The runtime whose spans and metrics this handler records through."""
        self._runs = RunTable(ambient)
        self._states = ConversationMemories(runtime.settings.max_conversations)
        self._lock = threading.RLock()
        self._guard = Guard(
            runtime.metrics,
            counted_as=ErrorStage.CALLBACK,
            logger=logger,
            kind="LangChain callback",
        )
        self.enabled = True

    @property
    def errors(self) -> int:
        """Internal errors swallowed so far (also counted in the errors metric)."""
        return self._guard.errors

    @property
    def registry(self) -> ConversationRegistry:
        """The conversations' analyzers this handler feeds."""
        return self._registry

    # Callbacks we never use: LangChain skips the handler for them.
    @property
    def ignore_retriever(self) -> bool:
        """Retriever runs carry nothing we use."""
        return True

    @property
    def ignore_retry(self) -> bool:
        """Retries are not turns."""
        return True

    @property
    def ignore_custom_event(self) -> bool:
        """Custom events carry nothing we use."""
        return True

    @property
    def ignore_agent(self) -> bool:
        """Legacy agent actions: tool runs say the same."""
        return True

    # ------------------------------------------------------------- chat models

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open the call's scope; record a prune visible in its input."""
        if not self.enabled:
            return
        with self._lock, self._guard.stage("on_chat_model_start"):
            meta = metadata or {}
            conv = self._runs.conversation(run_id, parent_run_id, meta)
            history = messages[0] if messages else []
            state = self._states.get(conv.id)
            internal = args.is_internal(meta, history)
            run = Run(RunKind.CHAT, conv, time.time_ns(), internal=internal)
            if internal:
                if meta.get(msg.LC_SOURCE) == msg.SUMMARIZATION:
                    state.add_summarizer_text("\n".join(msg.message_text(m) for m in history))
            else:
                run.scan = scan_input(history, state)
                pruned = rec.prune_observation(run.scan, state)
                if pruned is not None:
                    self._compaction(conv, pruned, start_ns=run.start_ns)
                run.messages = history
                run.chat = ChatCall(
                    provider=args.text_or_none(meta.get("ls_provider")),
                    model=args.model_name(meta, kwargs),
                    start_ns=run.start_ns,
                    parent=current_context(),
                )
            run.call = FrameworkCall(conv.id, id_given=conv.given, internal=internal)
            self._runs.add(run_id, run)
            run.token = enter_call(run.call)  # last: nothing may fail after the scope opens

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the call's scope; record its compaction blocks and its turn."""
        with self._lock, self._guard.stage("on_llm_end"):
            run = self._close(run_id)
            if run is None or run.kind is not RunKind.CHAT or run.internal or run.chat is None:
                return
            if run.call is not None and run.call.observed_by_sdk:
                return  # the instrumented client recorded this turn and its compactions
            self._turn(run, args.response_message(response), response.llm_output)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a failed call's scope; a failed call is not a turn."""
        with self._lock, self._guard.stage("on_llm_error"):
            self._close(run_id)

    def _turn(self, run: Run, response: AIMessage | None, llm_output: Any) -> None:
        if run.chat is None:
            return
        conv = run.conversation
        state = self._states.get(conv.id)
        server = rec.server_observations(response, run.messages, state) if response else []
        for compaction in server:
            self._compaction(conv, compaction, start_ns=run.start_ns)
        context = rec.context_tokens(response, llm_output, run.scan.live_tokens, state)
        if server and not args.has_usage(response) and server[-1].tokens_after is not None:
            context = server[-1].tokens_after  # the provider read only the summary onwards
        observation = rec.turn_observation(
            response=response, model=run.chat.model, context=context, scan=run.scan,
            state=state,
        )  # fmt: skip
        analysis = self._registry.get(conv.id).observe_turn(observation)
        if analysis.settled is not None:
            self._telemetry.settled(analysis.settled)
        state.summarizer_texts.clear()
        usage = response.usage_metadata if response is not None else None
        call = ChatCall(
            provider=run.chat.provider,
            model=run.chat.model,
            start_ns=run.chat.start_ns,
            parent=run.chat.parent,
            input_tokens=usage.get("input_tokens") if usage else None,
            output_tokens=usage.get("output_tokens") if usage else None,
        )
        self._telemetry.turn(analysis, observation, conv, call)

    # ------------------------------------------------------------------ chains

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: dict[str, Any] | Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run's state (the history before a summarization)."""
        if not self.enabled:
            return
        with self._lock, self._guard.stage("on_chain_start"):
            meta = metadata or {}
            conv = self._runs.conversation(run_id, parent_run_id, meta)
            self._runs.add(run_id, Run(RunKind.CHAIN, conv, time.time_ns(), inputs=inputs))
            if meta.get(msg.LC_SOURCE) == msg.SUMMARIZATION:
                self._states.get(conv.id).add_summarizer_text(args.input_text(inputs))

    def on_chain_end(
        self,
        outputs: dict[str, Any] | Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record a summarization or a langmem running summary in the run's output."""
        with self._lock, self._guard.stage("on_chain_end"):
            run = self._runs.pop(run_id)
            if run is None or outputs is None:
                return
            conv = run.conversation
            state = self._states.get(conv.id)
            summarized = msg.summarization_output(outputs)
            if summarized is not None:
                self._summarization(run, summarized, state)
            if isinstance(outputs, dict) and msg.find_running_summary(outputs) is not None:
                analyzer = self._registry.get(conv.id)
                observation = rec.running_summary_observation(run.inputs, outputs, state, analyzer)
                if observation is not None:
                    self._compaction(conv, observation, start_ns=run.start_ns)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a failed run."""
        with self._lock, self._guard.stage("on_chain_error"):
            self._runs.pop(run_id)

    def _summarization(
        self, run: Run, output: msg.SummarizationOutput, state: ConversationMemory
    ) -> None:
        key = f"{hash(msg.message_text(output.summary))}:{len(output.kept)}"
        if key in state.handled_summaries:
            return  # the same update seen again by an enclosing run
        state.handled_summaries.put(key, 0)
        before = msg.state_messages(run.inputs) or []
        analyzer = self._registry.get(run.conversation.id)
        observation = rec.summarization_observation(before, output, state, analyzer)
        self._compaction(run.conversation, observation, start_ns=run.start_ns)

    # ------------------------------------------------------------------- tools

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the tool's name for its end."""
        if not self.enabled:
            return
        with self._lock, self._guard.stage("on_tool_start"):
            conv = self._runs.conversation(run_id, parent_run_id, metadata)
            name = args.text_or_none(kwargs.get("name")) or args.text_or_none(
                (serialized or {}).get("name")
            )
            self._runs.add(run_id, Run(RunKind.TOOL, conv, time.time_ns(), name=name))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Remember the result's size; a tool the model did not ask for is phase evidence."""
        with self._lock, self._guard.stage("on_tool_end"):
            run = self._runs.pop(run_id)
            if run is None:
                return
            state = self._states.get(run.conversation.id)
            call_id = output.tool_call_id if isinstance(output, ToolMessage) else None
            if isinstance(output, ToolMessage):
                state.tool_tokens.put(msg.tool_message_key(output), msg.message_tokens(output))
            if run.name and (call_id is None or call_id not in state.requested_tool_ids):
                state.extra_tools.append(run.name)
                del state.extra_tools[:-EXTRA_TOOLS_MEMORY]

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a failed tool run."""
        with self._lock, self._guard.stage("on_tool_error"):
            self._runs.pop(run_id)

    # ---------------------------------------------------------------- internals

    def _compaction(
        self, conv: ConversationRef, observation: CompactionObservation, *, start_ns: int
    ) -> None:
        analyzer: ConversationAnalyzer = self._registry.get(conv.id)
        analysis = analyzer.observe_compaction(observation)
        self._telemetry.compaction(
            analysis, start_ns=start_ns, summary_text=observation.summary_text
        )

    def _close(self, run_id: UUID) -> Run | None:
        run = self._runs.pop(run_id)
        if run is not None and run.call is not None and run.token is not None:
            exit_call(run.call, run.token)
            run.token = None
        return run
