"""The framework call scope: what a framework's chat-model run tells the SDK layer beneath it.

When a LangChain chat model (``ChatAnthropic``, ``ChatOpenAI``...) calls an
anthropic or openai client that ``CompactionInstrumentor`` also wraps, both
layers see the same LLM call. The callback handler opens a :class:`FrameworkCall`
for the duration of the chat-model run; the SDK layer reads it with
:func:`current_call` and:

- analyses the call in ``conversation_id`` (the LangGraph thread, when given);
- calls :meth:`FrameworkCall.mark_observed` when it records the turn, so the
  handler does not record the same turn (nor the response's compaction blocks)
  a second time;
- when ``internal`` is true (a summarizer call inside a compaction), emits its
  inference span but feeds no turn to the conversation: the call is the cost of
  a compaction, not a step of the agent;
- when ``window`` is given (the framework was configured with its own context
  window: strands ``context_window_limit``, LiteLLM's model info, pydantic-ai's
  model settings), reads the call's pressure against it instead of the model's.

It sits beside the SDK layer, not in the ``langchain`` package, and imports
nothing, so both layers import it (the handler to open a call, ``_scope`` to read
it) without importing each other, whether or not langchain-core is installed.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field

__all__ = ["FrameworkCall", "current_call", "enter_call", "exit_call"]


@dataclass(slots=True)
class FrameworkCall:
    """One chat-model run of a framework, as seen by the SDK layer below it.

    Args:
        conversation_id: the conversation the call belongs to.
        id_given: whether the application gave the id (a LangGraph
            ``thread_id``), so it may also become ``gen_ai.conversation.id``.
        internal: a middleware-internal call (the summarizer of a compaction).
        framework: the framework's name, for logs.
        window: the context window the framework was configured with, in tokens
            (None: the model's, from the window table): the one the call's pressure
            and its compactions' fractions are read against.
        owns_calls: the framework records each of its calls itself (LiteLLM's callback
            layer): an instrumented client below it records nothing, so a call is one
            span whichever layers see it.
    """

    conversation_id: str
    id_given: bool = False
    internal: bool = False
    framework: str = "langchain"
    window: int | None = None
    owns_calls: bool = False
    sdk_turns: int = 0
    closed: bool = False
    outer: FrameworkCall | None = field(default=None, repr=False)

    def mark_observed(self) -> None:
        """Called by the SDK layer when it recorded this call as a turn."""
        self.sdk_turns += 1

    @property
    def observed_by_sdk(self) -> bool:
        """Whether an instrumented client below recorded the call itself."""
        return self.sdk_turns > 0


_CALL: contextvars.ContextVar[FrameworkCall | None] = contextvars.ContextVar(
    "otel_compaction_framework_call", default=None
)


def current_call() -> FrameworkCall | None:
    """The framework call running in this context, if any (closed ones never count)."""
    call = _CALL.get()
    while call is not None and call.closed:
        call = call.outer
    return call


def enter_call(call: FrameworkCall) -> contextvars.Token[FrameworkCall | None]:
    """Make ``call`` current; hand the token to :func:`exit_call` when it ends.

    Its ``outer`` is the innermost open call: closed ones are skipped, so calls whose
    scope could not be reset (ended in another context) never pile up in a chain.
    """
    call.outer = current_call()
    return _CALL.set(call)


def exit_call(call: FrameworkCall, token: contextvars.Token[FrameworkCall | None]) -> None:
    """Close ``call`` and restore the scope ``token`` replaced.

    A run that ends in another context than it started in (a stream left
    unfinished and closed later by the garbage collector or another task)
    cannot reset its token; the call is closed all the same, so
    :func:`current_call` no longer returns it.
    """
    call.closed = True
    with contextlib.suppress(ValueError):
        _CALL.reset(token)
