"""The aider hooks' own contracts, in process: each wrapper calls the method once and returns
what it returns, carries the scope into the thread aider starts, and marks summaries.

aider itself (which pins an openai release the test environment cannot share) is driven
for real in ``tests/frameworks/test_aider.py``; here the wrappers are installed on a class
with the methods' names and shapes (``Coder.create``, ``format_chat_chunks``,
``summarize_start`` / ``summarize_worker``, ``ChatSummary.summarize_all``), registered as
the aider modules they wrap.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from otel_compaction import conversation
from otel_compaction.config import Settings
from otel_compaction.instrument import _scope
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.litellm import _aider, _hint, install_when_imported, uninstall


@dataclass
class Chunks:
    """The fields of aider's ``ChatChunks`` the hook reads."""

    done: list[Any] = field(default_factory=list)
    chat_files: list[Any] = field(default_factory=list)
    cur: list[Any] = field(default_factory=list)
    reminder: list[Any] = field(default_factory=list)


class Coder:
    """The methods of ``aider.coders.base_coder.Coder`` the hooks wrap, doing what aider's do."""

    def __init__(self) -> None:
        self.cur_messages = [{"role": "user", "content": "Question"}]
        self.seen: list[Any] = []
        self.thread: threading.Thread | None = None

    @classmethod
    def create(cls, from_coder: Coder | None = None) -> Coder:
        return cls()

    def format_chat_chunks(self) -> Chunks:
        sent = {"role": "user", "content": "Question\n\nReply in English."}
        files = {"role": "user", "content": "notes.md: ..."}
        return Chunks(chat_files=[files], cur=[sent], reminder=[{"role": "system", "content": "R"}])

    def summarize_start(self) -> None:
        self.thread = threading.Thread(target=self.summarize_worker)  # no context copied
        self.thread.start()

    def summarize_worker(self) -> None:
        self.seen.append((_scope.given_conversation(), _scope.framework_call()))


class ChatSummary:
    """``aider.history.ChatSummary.summarize_all``: what it returns is the summary."""

    def summarize_all(self, messages: list[Any]) -> list[Any]:
        call = _scope.framework_call()
        return [{"role": "user", "content": "summary"}, call]


@pytest.fixture
def hooked() -> Iterator[Runtime]:
    """The hooks installed on the stand-in classes, registered as aider's modules."""
    modules = {
        "aider.coders.base_coder": types.ModuleType("aider.coders.base_coder"),
        "aider.history": types.ModuleType("aider.history"),
    }
    modules["aider.coders.base_coder"].Coder = Coder  # type: ignore[attr-defined]
    modules["aider.history"].ChatSummary = ChatSummary  # type: ignore[attr-defined]
    runtime = Runtime(Settings())
    sys.modules.update(modules)
    try:
        install_when_imported(runtime)
        _aider.install(runtime)  # twice: each method is wrapped once
        yield runtime
    finally:
        uninstall()
        for name in modules:
            sys.modules.pop(name, None)


def test_the_summarizer_thread_gets_the_scope_of_the_coder_that_started_it(
    hooked: Runtime,
) -> None:
    """``summarize_worker`` runs, in aider's plain thread, in the caller's conversation and
    in a summarizer scope."""
    coder = Coder()
    with conversation("aider-1"):
        coder.summarize_start()
    assert coder.thread is not None
    coder.thread.join()
    ((given, call),) = coder.seen
    assert given is not None
    assert given.id == "aider-1"
    assert call is not None
    assert call.internal
    assert call.framework == "aider"


def test_summaries_are_made_in_a_summarizer_scope_once(hooked: Runtime) -> None:
    """``summarize_all`` returns aider's result, made in one summarizer scope (none nested)."""
    summary, call = ChatSummary().summarize_all([])
    assert summary == {"role": "user", "content": "summary"}
    assert call.internal
    assert _aider.summarizing(lambda: _scope.framework_call()) is not None
    assert _scope.framework_call() is None


def test_a_laid_out_request_tells_the_next_call_what_is_rendered_for_it(hooked: Runtime) -> None:
    """After ``format_chat_chunks`` the next LiteLLM call learns the files, the reminder and
    the suffixed question; a coder made from another continues its conversation."""
    coder = Coder()
    chunks = coder.format_chat_chunks()
    hint = _hint.take_hint()
    assert isinstance(chunks, Chunks)
    assert hint.ephemeral is not None
    assert hint.ephemeral.rendered == frozenset({"notes.md: ...", "R"})
    assert hint.ephemeral.suffixed == ("Question\n\nReply in English.", "Question")
    assert hint.remember is not None
    hint.remember("conv-1")
    successor = Coder.create(from_coder=coder)
    successor.format_chat_chunks()
    assert _hint.take_hint().conversation == "conv-1"
    assert _hint.take_hint() is _hint._NO_HINT


def test_uninstall_restores_the_methods(hooked: Runtime) -> None:
    """After ``uninstall`` aider's methods are its own again."""
    uninstall()
    assert not hasattr(Coder.__dict__["summarize_start"], "__wrapped__")
    assert not hasattr(ChatSummary.__dict__["summarize_all"], "__wrapped__")
