"""The scripted model: what the demo's LLM answers, turn by turn, and the summaries it writes.

A plan is a string, one letter per turn, naming what the model does on that turn:

====== ============================== ======================== =============
letter tool call                      tool category            typical phase
====== ============================== ======================== =============
``r``  ``read_file {path}``           read                     explore
``g``  ``grep {pattern}``             read                     explore
``t``  none: the model reasons aloud  none                     hypothesize
``e``  ``edit_file {path, old, new}`` edit                     patch
``v``  ``run_tests {target}``         test                     verify
====== ============================== ======================== =============

The phase filter of the instrumentation sees only these tool calls, so a plan
is also the phase story of a run. :class:`ScriptedModel` answers one agent:
its turns from the plan, the summaries its summarizer asks for, and the
server-side compactions the script places on given turns.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.testing.llm_api import RecordedRequest, Reply, ToolCall

SUMMARIZER_MARKER = "You summarize an agent's work for its own later use."
"""First line of the summarizer's system prompt: how the model tells a summary request."""

SUMMARY_OPEN, SUMMARY_CLOSE = "<summary>", "</summary>"

PLAN_PHASES: Mapping[str, str] = {
    "r": "explore",
    "g": "explore",
    "t": "hypothesize",
    "e": "patch",
    "v": "verify",
}
"""The phase each plan letter stands for (what an agent reporting its phase says)."""


def filler(seed: str, chars: int, vocabulary: Sequence[str]) -> str:
    """Deterministic, non-repeating text of about ``chars`` characters, seeded by ``seed``.

    Tool outputs and summaries must differ from each other (identical messages
    would look like one message to the instrumentation's history matching).
    """
    state = zlib.crc32(seed.encode())
    words: list[str] = []
    size = 0
    while size < chars:
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        word = vocabulary[state % len(vocabulary)]
        if state % 7 == 0:
            word = f"{word}_{state % 997}"
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def words_of(text: str) -> list[str]:
    """The words of a sentence, for :func:`filler` vocabularies."""
    return re.findall(r"[a-z_]+", text.lower())


_REASONING = (
    "The assertion compares the order total against the fixture, and the fixture was "
    "generated before the currency rounding change; if the fixture is stale the parser "
    "is innocent. The traceback points at the totals helper, but the numbers differ by "
    "exactly the rounding delta, which the helper cannot produce on its own."
)


_REASONING_WORDS = words_of(
    "fixture stale rounding helper parser assertion expected actual cent delta total "
    "currency generated before change suspect evidence traceback compare order"
)


@dataclass(frozen=True, slots=True)
class Subject:
    """What the agent works on: the files it reads and edits, the tests it runs."""

    files: tuple[str, ...]
    edits: tuple[str, ...]
    pattern: str = "order_total"
    tests: str = "tests/integration"

    def file(self, turn: int) -> str:
        """The file read on ``turn``."""
        return self.files[turn % len(self.files)]

    def edit(self, turn: int) -> str:
        """The file edited on ``turn``."""
        return self.edits[turn % len(self.edits)]


def step(letter: str, turn: int, subject: Subject, reasoning_chars: int = 0) -> Reply:
    """The model's reply on ``turn`` for one plan letter (``t``: about ``reasoning_chars``)."""
    if letter == "r":
        call = ToolCall("read_file", {"path": subject.file(turn)})
        return Reply(f"Reading {subject.file(turn)}.", (call,))
    if letter == "g":
        call = ToolCall("grep", {"pattern": subject.pattern, "path": "src/"})
        return Reply(f"Searching for {subject.pattern}.", (call,))
    if letter == "t":
        more = filler(f"reasoning/{turn}", reasoning_chars - len(_REASONING), _REASONING_WORDS)
        return Reply(f"Turn {turn}: {_REASONING} {more}".rstrip())
    if letter == "e":
        path = subject.edit(turn)
        arguments = {"path": path, "old": f"v1_call_{turn}(", "new": f"v2_call_{turn}("}
        return Reply(f"Editing {path}.", (ToolCall("edit_file", arguments),))
    if letter == "v":
        call = ToolCall("run_tests", {"target": subject.tests})
        return Reply("Running the tests.", (call,))
    raise ValueError(f"unknown plan letter {letter!r} (expected one of {''.join(PLAN_PHASES)})")


def phase_of(plan: str, turn: int) -> str:
    """The phase the plan's letter on ``turn`` (1-based) stands for."""
    return PLAN_PHASES[plan[min(turn, len(plan)) - 1]]


Summarizer = Callable[[int, str], str]
"""``(compaction number, text the summarizer was given) -> summary``."""


@dataclass
class ScriptedModel:
    """The scripted LLM behind one demo agent.

    Args:
        plan: one letter per turn (see the module docstring); after the plan
            the model answers with text only.
        subject: the files and tests the tool calls name.
        summarize: writes the summary when the agent's summarizer asks.
        server_compactions: turn -> summary: the response to that turn carries
            a server-side compaction with this summary (Anthropic
            ``compact_20260112``; the script stands in for the trigger).
        reasoning_chars: length of the text of a turn without tool calls.
    """

    plan: str
    subject: Subject
    summarize: Summarizer | None = None
    server_compactions: Mapping[int, str] = field(default_factory=dict)
    reasoning_chars: int = 2400
    turns: int = field(default=0, init=False)
    summaries: int = field(default=0, init=False)

    def reply(self, request: RecordedRequest) -> Reply:
        """The reply to one request of this agent."""
        if _is_summary_request(request.body):
            self.summaries += 1
            if self.summarize is None:
                return Reply(status=400, error_message="this demo agent has no summarizer")
            return Reply(self.summarize(self.summaries, request_text(request.body)))
        self.turns += 1
        if self.turns > len(self.plan):
            return Reply("The task is done.")
        reply = step(self.plan[self.turns - 1], self.turns, self.subject, self.reasoning_chars)
        summary = self.server_compactions.get(self.turns)
        if summary is None:
            return reply
        return Reply(reply.text, reply.tool_calls, compaction=summary)


def _is_summary_request(body: Mapping[str, Any]) -> bool:
    system = body.get("system")
    if isinstance(system, str) and system.startswith(SUMMARIZER_MARKER):
        return True
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, Mapping) and first.get("role") == "system":
            content = first.get("content")
            return isinstance(content, str) and content.startswith(SUMMARIZER_MARKER)
    return False


def request_text(body: Mapping[str, Any]) -> str:
    """All message text of a request, joined (what a summarizer reads)."""
    parts: list[str] = []
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            _collect_text(message.get("content"), parts)
    return "\n".join(parts)


def _collect_text(value: Any, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_text(item, parts)
    elif isinstance(value, Mapping):
        for key in ("text", "content"):
            _collect_text(value.get(key), parts)


# --------------------------------------------------------------------------- #
# Summaries
# --------------------------------------------------------------------------- #


@dataclass(frozen=True, slots=True)
class Brief:
    """The preserve-schema fields of a summary: goal, plan, decisions...

    Why these: docs/concepts.md#the-preserve-schema.
    """

    goal: str
    plan: str
    decisions: Sequence[str]
    open_errors: Sequence[str]
    next_action: str


def render_summary(brief: Brief, extra: str = "") -> str:
    """A summary with the five preserve-schema sections, wrapped in ``<summary>`` tags."""
    decisions = "\n".join(f"- {d}" for d in brief.decisions) or "- none yet"
    errors = "\n".join(f"- {e}" for e in brief.open_errors) or "- none"
    body = (
        f"## Goal\n{brief.goal}\n## Plan\n{brief.plan}\n## Decisions\n{decisions}\n"
        f"## Open errors\n{errors}\n## Next action\n{brief.next_action}\n"
    )
    return f"{SUMMARY_OPEN}\n{body}{extra}{SUMMARY_CLOSE}"


def prior_summary(text: str) -> str | None:
    """The outermost earlier summary in ``text`` (its inside), if the text holds one."""
    start = text.find(SUMMARY_OPEN)
    end = text.rfind(SUMMARY_CLOSE)
    if start < 0 or end <= start:
        return None
    return text[start + len(SUMMARY_OPEN) : end].strip("\n")
