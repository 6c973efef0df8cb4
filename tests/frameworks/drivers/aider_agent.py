"""aider for real (its ``Coder``, its ``ChatSummary`` thread) on a scripted server on loopback.

A coder in ``whole`` edit mode, with one file in the chat, answers ``steps`` questions,
each answer an edit of that file; after each edit aider moves the exchange to its
``done_messages``, and as its chat history budget (``--max-chat-history-tokens``) is
small, summarizes them in the thread it starts itself, through its weak model, and
sends the summary in their place. Nothing leaves the machine: ``HOME`` is a fresh folder
whose model-info cache is fresh (aider fetches LiteLLM's price list otherwise), and
LiteLLM reads its local price map.

aider 0.86.2 drops the summary its thread made when the exchange ended in an edit:
``move_back_cur_messages`` appends its note on the edit after the thread copied
``done_messages``, so ``summarize_end`` finds them changed. The summary is used when
the coder switches edit format (``/chat-mode``): ``Coder.create(from_coder=...)``
summarizes the done messages in the caller's thread (option ``switch``: questions
asked after the switch).

Options: ``provider`` (anthropic | openai), ``stream``, ``instrument``, ``steps``,
``switch``, ``history_tokens``, ``conversation`` (wrap the run in ``conversation(id)``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from otel_compaction import conversation
from otel_compaction.testing.llm_api import FakeLLMAPI, RecordedRequest, Reply
from tests.frameworks.drivers._common import Telemetry, options, report

SUMMARY = (
    "We looked at parse_date in src/acme/parser.py: it drops the timezone offset. "
    "The user wants test_parse_dates to pass; the fix is to keep the offset."
)


def script(request: RecordedRequest) -> Reply:
    """Summaries for aider's summarizer; otherwise an edit of ``notes.md`` in aider's
    ``whole`` format (the file's new content in a fence after its name)."""
    body = json.dumps(request.body)
    if "summarize this partial conversation" in body:
        return Reply(SUMMARY + f" ({body.count('# USER')} user messages summarized.)")
    turn = body.count("Question ")
    reason = (
        "parse_date in src/acme/parser.py builds a naive datetime, so the offset parsed "
        "from the string is lost before the comparison in the test. "
    )
    return Reply(
        f"Recording what question {turn} found. {reason * 2}\n\n"
        f"notes.md\n```\n# Notes\n\nThe offset is dropped in parse_date.\n```\n"
    )


def prepare_home() -> None:
    """A fresh HOME with a fresh model-info cache, so aider fetches nothing."""
    home = Path(tempfile.mkdtemp(prefix="aider-home-"))
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True)
    (caches / "model_prices_and_context_window.json").write_text(json.dumps({"none": {}}))
    os.environ["HOME"] = str(home)


def run(opts: dict[str, Any], base: str) -> list[Any]:
    from aider.coders import Coder
    from aider.io import InputOutput
    from aider.models import Model

    if opts.get("provider", "anthropic") == "anthropic":
        os.environ["ANTHROPIC_API_BASE"] = base
        model = Model("anthropic/claude-sonnet-4-5", weak_model="anthropic/claude-haiku-4-5")
    else:
        os.environ["OPENAI_API_BASE"] = base + "/v1"
        model = Model("openai/gpt-4o", weak_model="openai/gpt-4o-mini")
    model.max_chat_history_tokens = int(opts.get("history_tokens", 700))
    work = Path(tempfile.mkdtemp(prefix="aider-work-"))
    notes = work / "notes.md"
    notes.write_text("# Notes\n")
    os.chdir(work)
    io = InputOutput(yes=True, pretty=False, fancy_input=False, chat_history_file=None)
    coder = Coder.create(
        main_model=model,
        edit_format="whole",
        io=io,
        fnames=[str(notes)],
        auto_lint=False,
        stream=bool(opts.get("stream")),
        use_git=False,
        map_tokens=0,
        suggest_shell_commands=False,
        detect_urls=False,
    )
    replies = []
    steps = int(opts.get("steps", 12))
    for step in range(steps):
        replies.append(coder.run(with_message=f"Question {step}: why does test_parse_dates fail?"))
    coder.summarize_end()
    switch = int(opts.get("switch") or 0)
    if switch:
        # What `/chat-mode ask` does: a coder of another edit format from this one, whose
        # done messages aider summarizes (ChatSummary.summarize_all) on the way.
        coder = Coder.create(from_coder=coder, edit_format="ask", summarize_from_coder=True)
        for step in range(steps, steps + switch):
            replies.append(coder.run(with_message=f"Question {step}: is the fix complete?"))
    replies.append([m["content"] for m in coder.done_messages])
    return replies


def main() -> None:
    opts = options()
    prepare_home()
    os.environ.setdefault("ANTHROPIC_API_KEY", "test-key")
    os.environ.setdefault("OPENAI_API_KEY", "test-key")
    telemetry = Telemetry(bool(opts.get("instrument", True)))
    api = FakeLLMAPI(script)
    named = opts.get("conversation")
    scope = conversation(named) if named else contextlib.nullcontext()
    with api.serve() as base, contextlib.redirect_stdout(sys.stderr), scope:
        replies = run(opts, base)
    summaries = sum(1 for r in api.requests if "summarize this partial" in json.dumps(r.body))
    settle()
    errors = telemetry.errors()
    if telemetry.instrumented:
        telemetry.instrumentor.uninstrument()
    report(
        spans=telemetry.spans(),
        results=replies,
        requests=len(api.requests),
        summaries=summaries,
        errors=errors,
    )


def settle() -> None:
    """Wait (at most 60 s) for LiteLLM's logging pool to report the calls still in flight."""
    from otel_compaction.instrument.litellm import _handler

    callback = _handler.installed() if "litellm" in sys.modules else None
    deadline = time.monotonic() + 60
    while callback is not None and len(callback.observer) and time.monotonic() < deadline:
        time.sleep(0.01)


if __name__ == "__main__":
    main()
