"""install() registers the handler for every LangChain run; uninstall() removes it."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import weakref
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from otel_compaction import semconv as sc
from otel_compaction.config import Settings
from otel_compaction.instrument._runtime import Runtime
from otel_compaction.instrument.langchain import (
    create_handler,
    install,
    install_when_imported,
    installed_handler,
    uninstall,
)
from otel_compaction.testing import Capture
from tests.langchain._agents import GrowingSummarizer, ScriptedAgentModel, run, summarizing_agent


def _chats(cap: Capture) -> list[Any]:
    return [s for s in cap.spans if s.name.startswith(sc.OPERATION_CHAT)]


def _released(handler: weakref.ref[Any]) -> bool:
    """Whether nothing holds the handler any more (LangChain's hook registry included)."""
    gc.collect()
    return handler() is None


def test_installed_handler_sees_runs_without_callbacks(cap: Capture) -> None:
    """After install a chat model called without callbacks is recorded; after uninstall not."""
    model = FakeListChatModel(responses=["hi"])
    handler = install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        assert installed_handler() is handler
        model.invoke("hello")
        assert len(_chats(cap)) == 1
    finally:
        uninstall()
    model.invoke("hello again")
    assert len(_chats(cap)) == 1
    assert installed_handler() is None
    held = weakref.ref(handler)
    del handler
    assert _released(held)


def test_threads_started_before_install_see_the_handler(cap: Capture) -> None:
    """A thread that existed before install records its runs too (the hook's default value)."""
    model = FakeListChatModel(responses=["hi"])
    go, done = threading.Event(), threading.Event()

    def worker() -> None:
        go.wait()
        model.invoke("from a thread")
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        go.set()
        assert done.wait(timeout=30)
        thread.join()
    finally:
        uninstall()
    assert len(_chats(cap)) == 1


def test_installing_twice_records_each_call_once(cap: Capture) -> None:
    """A second install replaces the first: one hook, one span per call."""
    first = install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    second = install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        FakeListChatModel(responses=["hi"]).invoke("hello")
        assert installed_handler() is second
        assert not first.enabled
        replaced = weakref.ref(first)
        del first
        assert _released(replaced)  # its hook went with it
    finally:
        uninstall()
    assert len(_chats(cap)) == 1


def test_installed_handler_passed_again_records_once(cap: Capture) -> None:
    """Passing the installed handler in a run's callbacks does not record the run twice."""
    handler = install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        FakeListChatModel(responses=["hi"]).invoke("hello", config={"callbacks": [handler]})
    finally:
        uninstall()
    assert len(_chats(cap)) == 1


def test_handler_passed_explicitly_works_without_install(cap: Capture) -> None:
    """create_handler() gives a handler usable in a run's callbacks, no global state needed."""
    handler = create_handler(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    FakeListChatModel(responses=["hi"]).invoke("hello", config={"callbacks": [handler]})
    FakeListChatModel(responses=["hi"]).invoke("not recorded")
    assert len(_chats(cap)) == 1


def test_async_agent_runs_are_recorded_in_order(cap: Capture) -> None:
    """An agent driven with ainvoke records the same compactions and turns as a sync one."""
    model = ScriptedAgentModel(turns=16)
    agent = summarizing_agent(model, GrowingSummarizer(), trigger_tokens=800)
    install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        config: dict[str, Any] = {"configurable": {"thread_id": "async"}, "recursion_limit": 500}
        asyncio.run(agent.ainvoke({"messages": [("user", "fix the bug")]}, config=config))
    finally:
        uninstall()
    generations = [
        s.attributes[sc.LINEAGE_GENERATION]
        for s in cap.spans_named(sc.SPAN_COMPACTION)
        if s.attributes is not None
    ]
    assert generations == [0, 1, 2]
    assert len(_chats(cap)) == model.calls


def test_sync_run_after_async_keeps_counting(cap: Capture) -> None:
    """The sync and async paths share one conversation state per thread id."""
    model = ScriptedAgentModel(turns=0)
    agent = summarizing_agent(model, GrowingSummarizer(), trigger_tokens=10**6)
    install(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    try:
        config: dict[str, Any] = {"configurable": {"thread_id": "mixed"}}
        asyncio.run(agent.ainvoke({"messages": [("user", "one")]}, config=config))
        run(agent, thread_id="mixed", text="two")
    finally:
        uninstall()
    assert [s.attributes[sc.TURN_INDEX] for s in _chats(cap) if s.attributes] == [1, 2]


def test_install_when_imported_installs_at_once_if_langchain_is_loaded(cap: Capture) -> None:
    """With langchain-core already imported, the deferred install happens immediately."""
    runtime = Runtime(Settings(), tracer_provider=cap.tracer_provider)
    install_when_imported(runtime)
    try:
        handler = installed_handler()
        assert handler is not None
        assert handler.registry is runtime.registry
        FakeListChatModel(responses=["hi"]).invoke("hello")
    finally:
        uninstall()
    assert installed_handler() is None
    assert len(_chats(cap)) == 1


_DEFERRED_PROBE = """
import sys
from otel_compaction.instrument.langchain import install_when_imported
install_when_imported()
assert "langchain_core" not in sys.modules, "installing must not import LangChain"
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from otel_compaction.instrument.langchain import installed_handler
assert installed_handler() is not None, "the import must install the handler"
FakeListChatModel(responses=["hi"]).invoke("hello")
registry = installed_handler().registry
assert [registry.get(cid).turn_index for cid in registry.ids()] == [1]
print("ok")
"""


@pytest.mark.slow
def test_install_when_imported_waits_for_the_import() -> None:
    """In a fresh process the handler is installed only once the app imports langchain-core."""
    out = subprocess.run(
        [sys.executable, "-c", _DEFERRED_PROBE], check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "ok"
