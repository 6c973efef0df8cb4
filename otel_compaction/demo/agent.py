"""The demo's agent: a tool-using loop, and the three ways it compacts its context.

:class:`ToolAgent` does what a coding agent does: call the model with its
history, run the tools the model asked for, append the results, repeat. It
compacts in the three ways real agents do, each observed by the
instrumentation differently:

- :meth:`ToolAgent.rewrite`: summarize-then-truncate with no API call and no
  report: the instrumentation infers the compaction from the rewritten history;
- :meth:`ToolAgent.summarize`: an LLM summarizer call inside a
  ``compaction()`` block: an explicit compaction, the call its cost, not a turn;
- server-side: an :class:`~otel_compaction.demo.backends.AnthropicBackend` with
  ``server_compaction`` asks for ``compact_20260112`` context management and
  sends the compaction block back with the history, as the API wants.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span

from otel_compaction.demo.backends import Backend, Message, ModelTurn, user
from otel_compaction.demo.workspace import Workspace
from otel_compaction.instrument import compaction
from otel_compaction.testing.llm_api import estimate_tokens

GO_ON = "Go on."
"""The user's answer to a turn without tool calls."""


class ToolAgent:
    """A tool-using agent: its history, its tools, its model, and its compactions.

    Args:
        name: the agent's name (``gen_ai.agent.name`` of its ``invoke_agent`` span).
        backend: the provider it talks to.
        workspace: its tools.
        system: its system prompt.
        task: the first user message.
        span: its ``invoke_agent`` span, made current around each of its calls
            so that every call of this agent lands in one trace.
    """

    def __init__(
        self,
        name: str,
        backend: Backend,
        workspace: Workspace,
        *,
        system: str,
        task: str,
        span: Span | None = None,
    ) -> None:
        self.name = name
        self.backend = backend
        self.workspace = workspace
        self.system = system
        self.messages: list[Message] = [user(task)]
        self.span = span
        self.turns = 0
        self.last_input_tokens = 0
        self.summarized = False
        """Whether the history holds a summary (right after the task message)."""

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This agent's span as the current span (when it has one)."""
        if self.span is None:
            yield
            return
        with trace.use_span(self.span, end_on_exit=False):
            yield

    def step(self) -> ModelTurn:
        """One turn: call the model, run its tool calls, append everything."""
        with self.active():
            turn = self.backend.call(self.system, self.messages)
        self.turns += 1
        self.last_input_tokens = turn.input_tokens
        self.messages.append(turn.assistant)
        if turn.calls:
            outputs = [self.workspace.run(name, args) for _, name, args in turn.calls]
            self.messages.extend(self.backend.tool_results(turn.calls, outputs))
        else:
            self.messages.append(user(GO_ON))
        return turn

    def context_tokens(self) -> int:
        """The agent's own count of its next request, as the server will count it."""
        return (
            estimate_tokens(self.system)
            + estimate_tokens(self.backend.tools)
            + sum(estimate_tokens(m) for m in self.messages)
        )

    def _cut(self, keep_turns: int) -> int:
        """Index of the first message of the last ``keep_turns`` turns."""
        starts = [i for i, m in enumerate(self.messages) if m.get("role") == "assistant"]
        if keep_turns <= 0 or not starts:
            return len(self.messages)
        return starts[-min(keep_turns, len(starts))]

    def rewrite(self, summary: str, keep_turns: int) -> None:
        """Summarize-then-truncate, unannounced: task, summary, the last turns verbatim."""
        cut = self._cut(keep_turns)
        self.messages = [self.messages[0], user(summary), *self.messages[cut:]]
        self.summarized = True

    def summarize(
        self, *, keep_turns: int, carry_summary: bool, trigger: str = "token_pressure"
    ) -> str:
        """Compact through an LLM summarizer, inside a ``compaction()`` block.

        Args:
            keep_turns: the last turns kept verbatim after the summary.
            carry_summary: feed the previous summary to the summarizer
                (summary of summary: the livelock's condition); False resets the
                lineage: the summarizer sees only raw turns.
            trigger: why the agent compacts (``compaction.trigger``).
        """
        cut = self._cut(keep_turns)
        region, tail = self.messages[1:cut], self.messages[cut:]
        fed = region if carry_summary or not self.summarized else region[1:]
        with self.active(), compaction(trigger=trigger, tokens_before=self.context_tokens()) as c:
            summary = self.backend.summarize(transcript(fed))
            self.messages = [self.messages[0], user(summary), *tail]
            c.set_result(
                summary=summary,
                tokens_after=self.context_tokens(),
                compacted=[message_text(m) for m in region],
                retained=[message_text(m) for m in tail],
                continues_lineage=None if carry_summary else False,
            )
        self.summarized = True
        return summary


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one history message (tool outputs included)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        if isinstance(block, Mapping):
            for key in ("text", "content"):
                value = block.get(key)
                if isinstance(value, str):
                    parts.append(value)
    return "\n".join(parts)


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as the summarizer reads them: ``role: text`` lines."""
    return "\n\n".join(f"{m.get('role')}: {message_text(m)}" for m in messages)
