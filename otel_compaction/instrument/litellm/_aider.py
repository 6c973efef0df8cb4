"""aider: its chat summary is the compaction's cost, made in the agent's conversation.

When ``done_messages`` grow too big, ``Coder.summarize_start`` starts a
``threading.Thread`` on ``Coder.summarize_worker`` (a plain thread: no context is
copied into it), which calls ``ChatSummary.summarize`` and through it
``ChatSummary.summarize_all``: one ``litellm.completion`` per summarized chunk. The
next request sends the summary in place of the old messages; that rewritten history
is the compaction, inferred as for any agent, in the agent's conversation.

``Coder.format_chat_chunks`` is wrapped too: aider lays out each request afresh, the
files in the chat (their current content), the repository map and a reminder (a
system message, or a suffix of the last user message) placed after the history it
keeps; the LiteLLM call that follows is told which messages those are, so a file
edited between two requests, or the reminder gone, is not read as a rewrite.

``Coder.create`` is wrapped so that a coder made from another one (a ``/chat-mode``
switch: a new system prompt, the old history or its summary) continues the old
coder's conversation: the calls of each coder are placed in the conversation its
earlier calls were placed in.

Three wrappers carry the agent's scope into the summary:

- ``Coder.summarize_start`` keeps a copy of the caller's context (its
  ``conversation()`` block, phase reports, the conversation of its last call);
- ``Coder.summarize_worker`` runs in that copy;
- ``ChatSummary.summarize_all`` (also called directly when aider switches coders)
  runs in a summarizer scope, ``FrameworkCall(internal=True)``: its calls are spans
  of the agent's conversation that are no turns, and their tokens become the next
  compaction's summarizer cost.

Each wrapper calls aider's method exactly once with its arguments and returns what
it returns; our part is guarded.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import wrapt
from opentelemetry.instrumentation.utils import unwrap

from otel_compaction.instrument import _scope as scope
from otel_compaction.instrument._framework import FrameworkCall, enter_call, exit_call
from otel_compaction.instrument._guard import Guard
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.litellm._hint import RequestHint, note_request
from otel_compaction.instrument.litellm._read import Ephemeral
from otel_compaction.semconv import ErrorStage

__all__ = ["install", "summarizing", "uninstall"]

FRAMEWORK = "aider"
_TARGETS = (
    ("aider.coders.base_coder", "Coder", "create"),
    ("aider.coders.base_coder", "Coder", "format_chat_chunks"),
    ("aider.coders.base_coder", "Coder", "summarize_start"),
    ("aider.coders.base_coder", "Coder", "summarize_worker"),
    ("aider.history", "ChatSummary", "summarize_all"),
)

_lock = threading.Lock()
_wrapped: list[tuple[Any, str]] = []
_contexts: weakref.WeakKeyDictionary[Any, contextvars.Context] = weakref.WeakKeyDictionary()
_conversations: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""The conversation each coder's calls were placed in (a coder made from another one
continues it)."""


def install(runtime: Runtime) -> None:
    """Wrap the targets of the aider modules imported so far (each once)."""
    wrappers = {
        "create": _create_wrapper(runtime.guard),
        "format_chat_chunks": _chunks_wrapper(runtime.guard),
        "summarize_start": _start_wrapper(runtime.guard),
        "summarize_worker": _worker_wrapper(runtime.guard),
        "summarize_all": _summary_wrapper,
    }
    with _lock:
        done = {(id(owner), name) for owner, name in _wrapped}
        for module_name, class_name, method in _TARGETS:
            module = sys.modules.get(module_name)
            owner = getattr(module, class_name, None) if module is not None else None
            if not isinstance(owner, type) or (id(owner), method) in done:
                continue
            if not callable(getattr(owner, method, None)):
                continue
            wrapt.wrap_function_wrapper(owner, method, wrappers[method])
            _wrapped.append((owner, method))


def uninstall() -> None:
    """Restore every wrapped method."""
    with _lock:
        for owner, method in reversed(_wrapped):
            unwrap(owner, method)
        _wrapped.clear()


def summarizing(call: Callable[[], Any]) -> Any:
    """Run ``call`` in a summarizer scope (unless one is open already)."""
    current = scope.framework_call()
    if current is not None and current.internal:
        return call()
    framework = FrameworkCall(scope.last_conversation() or "", internal=True, framework=FRAMEWORK)
    token = enter_call(framework)
    try:
        return call()
    finally:
        exit_call(framework, token)


def _summary_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return summarizing(lambda: wrapped(*args, **kwargs))


def _chunks_wrapper(guard: Guard) -> Callable[..., Any]:
    """After aider laid out its request: tell the LiteLLM call that follows which of its
    messages are rendered for this request only."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        chunks = wrapped(*args, **kwargs)
        with guard.stage(ErrorStage.CONTEXT):
            coder = weakref.ref(instance)
            note_request(
                RequestHint(
                    ephemeral=_ephemeral(chunks, getattr(instance, "cur_messages", None)),
                    conversation=_conversations.get(instance),
                    remember=lambda conversation: _remember(coder, conversation),
                )
            )
        return chunks

    return wrapper


def _remember(coder: weakref.ref[Any], conversation: str) -> None:
    instance = coder()
    if instance is not None:
        _conversations[instance] = conversation


def _create_wrapper(guard: Guard) -> Callable[..., Any]:
    """``Coder.create(from_coder=...)`` (a chat-mode switch): the new coder continues the
    old one's conversation, though its system prompt differs and its history may be the
    old one's summary."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        coder = wrapped(*args, **kwargs)
        with guard.stage(ErrorStage.CONTEXT):
            source = kwargs.get("from_coder")
            conversation = _conversations.get(source) if source is not None else None
            if conversation is not None:
                _conversations[coder] = conversation
        return coder

    return wrapper


_RENDERED_CHUNKS = ("readonly_files", "repo", "chat_files", "reminder")
"""``ChatChunks`` parts aider renders afresh for each request (file contents, the repo map,
the reminder), never kept in ``done_messages``."""


def _ephemeral(chunks: Any, cur_messages: Any) -> Ephemeral:
    rendered = frozenset(
        m["content"]
        for part in _RENDERED_CHUNKS
        for m in getattr(chunks, part, None) or ()
        if isinstance(m, dict) and isinstance(m.get("content"), str)
    )
    sent = (getattr(chunks, "cur", None) or [None])[-1]
    kept = cur_messages[-1] if isinstance(cur_messages, list) and cur_messages else None
    suffixed = None
    if isinstance(sent, dict) and isinstance(kept, dict) and sent is not kept:
        before, after = kept.get("content"), sent.get("content")
        if isinstance(before, str) and isinstance(after, str) and after != before:
            suffixed = (after, before)
    return Ephemeral(rendered=rendered, suffixed=suffixed)


def _start_wrapper(guard: Guard) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with guard.stage(ErrorStage.CONTEXT):
            _contexts[instance] = contextvars.copy_context()
        return wrapped(*args, **kwargs)

    return wrapper


def _worker_wrapper(guard: Guard) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        context = None
        with guard.stage(ErrorStage.CONTEXT):
            context = _contexts.pop(instance, None)

        def run() -> Any:
            return summarizing(lambda: wrapped(*args, **kwargs))

        return run() if context is None else context.run(run)

    return wrapper
