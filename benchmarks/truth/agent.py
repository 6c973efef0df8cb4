"""A generated tool-using agent and the ways it compacts, each recording its truth.

The agent keeps its history as a head (the task message, or the summary that replaced
it) and a list of turns (the assistant's item(s) and one tool result), in its wire's
own shape. Every compaction method records a :class:`CompactionTruth` on the run;
the first call that sees the compacted context fills in its size.

Replies (tool names, tool-use ids, output sizes, phase plan) come from one seeded
generator and output texts from another, so two agents given the same reply seed
answer alike and differ only in what their tools return.

Tool inputs and rediscovery (docs/concepts.md#rediscovery): every call's input names a
path of its own (the drawn path with its last three letters replaced by the call's
number, so the same length and the same tokens as the drawn one), so no call repeats
another by chance. A compaction that drops tool outputs (a lossy or whole rewrite, a
server compaction, a prune) makes the agent fetch some of them again: in the
``REREAD_CALLS`` calls after it, a call of a reading tool (``read_file``, ``grep``,
``list_files``) repeats the most recent dropped call of the same tool whose input has
the length of the drawn one (the same tokens again), if there is one not repeated
already. Extractive summaries (outputs quoted) and failed compactions drop nothing.
Each repeat is counted on the compaction's truth (``rereads``, ``reread_tokens``).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from benchmarks.truth.model import CallRecord, CompactionTruth
from benchmarks.truth.phases import PhasePlan
from benchmarks.truth.text import TextSource, carried, summary
from benchmarks.truth.wire import Item, ToolSpec
from otel_compaction import conversation, report_phase
from otel_compaction.testing.llm_api import Reply, ToolCall, estimate_tokens

if TYPE_CHECKING:
    from benchmarks.truth.run import Run

CLEARED = "[cleared]"
REREAD_CALLS: Final = 20
"""Calls after a compaction in which the agent fetches again what it dropped."""
READING_TOOLS: Final = frozenset({"read_file", "grep", "list_files"})
"""The tools whose dropped outputs are fetched again."""
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class Turn:
    """One turn of the history: its items, the fact its tool found, and the output."""

    items: list[Item]
    call: int
    fact: str
    output: str
    result: Item
    tool: str = ""
    path: str = ""

    @property
    def quoted(self) -> str:
        """The output as an extractive summary quotes it (it opens with its fact)."""
        return self.output


class Agent:
    """One agent of a run (one true conversation)."""

    def __init__(
        self,
        run: Run,
        name: str,
        *,
        system: str,
        tools: list[ToolSpec],
        task: str,
        replies: random.Random,
        outputs: random.Random,
        output_tokens: tuple[int, int],
        conversation_id: str | None = None,
        ids: str | None = None,
    ) -> None:
        self.run, self.name, self.system = run, name, system
        self.wire = run.wire
        self.tools = self.wire.tools(tools)
        self.task = task
        self.replies = replies
        self.text = TextSource(outputs, name)
        self.output_tokens = output_tokens
        self.conversation_id = conversation_id
        self.ids = ids or name
        """The label in this agent's tool-use ids (agents that answer alike share it)."""
        self.plan = PhasePlan(replies, run.reported_phases)
        self.task_item = self.wire.user(task)
        self.head: list[Item] = [self.task_item]
        self.turns: list[Turn] = []
        self.calls = 0
        self.summary: str | None = None
        self.generation: int | None = None
        self.style = run.style
        self._pending: list[CompactionTruth] = []
        self._force_next = False
        self._paths = [self.text.path() for _ in range(6)]
        self._owed: list[Turn] = []
        """Dropped calls of reading tools the agent may fetch again, most recent first."""
        self._reread_left = 0
        self._reread: set[tuple[str, str]] = set()
        """Calls fetched again already (a second repeat would be a habit, not rediscovery)."""
        self._owner: CompactionTruth | None = None

    # ------------------------------------------------------------------ calls

    def items(self) -> list[Item]:
        """The history as the next request sends it."""
        return [*self.head, *(item for turn in self.turns for item in turn.items)]

    def next_tokens(self) -> int:
        """The server's count of the next request (the fake's own estimate)."""
        return self.wire.context_tokens(self.system, self.tools, self.items())

    def at_pressure(self) -> bool:
        """Whether the next request reaches the run's trigger."""
        return self.next_tokens() >= self.run.trigger_tokens

    def step(self, force_phase: bool = False, server_summary: str | None = None) -> None:
        """One call: report the phase (if reported), call the model, append the tool result."""
        phase = self.plan.next(force=force_phase or self._force_next)
        self._force_next = False
        self.calls += 1
        call_id = f"{self.wire.name[:4]}_{self.ids}_{self.calls:03d}"
        path = self._input_path(phase.tool, self.replies.choice(self._paths))
        size = self.replies.randint(*self.output_tokens)
        call = ToolCall(phase.tool, {"path": path}, id=call_id)
        self.run.next_reply = Reply(
            "",
            tool_calls=(call,),
            compaction=server_summary,
            compaction_failed=bool(server_summary is not None and self.run.fail_next),
        )
        with self._scope():
            if phase.report is not None:
                report_phase(phase.phase, distribution=phase.report)
            answer = self.wire.call(
                self.system, self.tools, self.items(), server_summary is not None
            )
        for truth in self._pending:
            truth.after_tokens = answer.input_tokens
        self._pending.clear()
        fact = self.text.fact(phase.tool, path)
        output = self.text.output(fact, size)
        result = self.wire.tool_result(call_id, output)
        self.turns.append(
            Turn([*answer.items, result], self.calls, fact, output, result, phase.tool, path)
        )
        if (phase.tool, path) in self._reread and self._owner is not None:
            self._owner.reread_tokens += estimate_tokens(output)
        self.run.calls.append(
            CallRecord(self.name, self.calls, estimate_tokens(output), answer.input_tokens)
        )

    def _input_path(self, tool: str, drawn: str) -> str:
        """The call's input: a dropped call fetched again, else a path of its own."""
        if self._reread_left > 0:
            self._reread_left -= 1
            for turn in self._owed if tool in READING_TOOLS else ():
                if turn.tool == tool and len(turn.path) == len(drawn):
                    self._owed.remove(turn)
                    self._reread.add((tool, turn.path))
                    if self._owner is not None:
                        self._owner.rereads += 1
                    return turn.path
        n, code = self.calls, ""
        for _ in range(3):
            n, digit = divmod(n, len(_LETTERS))
            code = _LETTERS[digit] + code
        return drawn[:-6] + code + drawn[-3:]

    def _dropped(self, turns: list[Turn]) -> None:
        """A compaction dropped these turns' outputs: the next calls may fetch them again."""
        self._owner = self.run.truths[-1]
        self._reread_left = REREAD_CALLS
        self._owed = [
            t for t in reversed(turns)
            if t.tool in READING_TOOLS and (t.tool, t.path) not in self._reread
        ]  # fmt: skip

    @contextlib.contextmanager
    def _scope(self) -> Iterator[None]:
        if self.conversation_id is None:
            yield
            return
        with conversation(self.conversation_id):
            yield

    def steps(self, count: int, stop_at_pressure: bool = False) -> None:
        """``count`` plain calls (fewer if ``stop_at_pressure`` and the trigger is reached)."""
        for _ in range(count):
            if stop_at_pressure and self.at_pressure():
                return
            self.step()

    def toward_pressure(self) -> None:
        """One call; if it is likely the last before the trigger, maybe start a phase there.

        With probability ``run.boundary_chance`` (and a held phase) the block switch falls
        on the compaction: on this call for inferred phases (the last evidence before it).
        """
        ahead = self.next_tokens() + self.output_tokens[1] + 80
        force = not self.run.reported_phases and ahead >= self.run.trigger_tokens
        self.step(force_phase=force and self._chance())

    def arm_boundary(self) -> None:
        """For reported phases: maybe make the compaction's first call report a straddle."""
        if self.run.reported_phases and self._chance():
            self._force_next = True

    def until_pressure(self, limit: int = 200) -> None:
        """At least one call, then calls until the next request reaches the trigger."""
        self.toward_pressure()
        for _ in range(limit):
            if self.at_pressure():
                break
            self.toward_pressure()
        self.arm_boundary()

    def _chance(self) -> bool:
        if self.run.boundary_chance <= 0:
            return False
        return self.plan.would_straddle_held() and self.replies.random() < self.run.boundary_chance

    # ------------------------------------------------------------ compactions

    def _record(self, mode: str, kind: str, generation: int | None, **fields: object) -> None:
        before = self.next_tokens()
        pressure = before >= self.run.trigger_tokens
        truth = CompactionTruth(
            agent=self.name,
            turn=self.calls + 1,
            mode=mode,
            kind=kind,
            generation=generation,
            style=fields.pop("style", self.style),  # type: ignore[arg-type]
            failed=bool(fields.pop("failed", False)),
            pressure=pressure,
            trigger_tokens=self.run.trigger_tokens if pressure else before,
            before_tokens=before,
            window=self.run.window,
            kept_turns=int(fields.pop("kept_turns", 0)),  # type: ignore[call-overload]
        )
        self.run.truths.append(truth)
        self._pending.append(truth)

    def _summarize(self, turns: list[Turn], carry: bool, quote: bool = False) -> int:
        """Write the new summary of ``turns``; returns its generation."""
        new = summary(
            self.style,
            self.task,
            [t.fact for t in turns],
            [t.quoted for t in turns] if quote else (),
        )
        previous = self.summary if carry else None
        generation = 0 if previous is None or self.generation is None else self.generation + 1
        self.summary, self.generation = carried(previous, new), generation
        return generation

    def rewrite(self, keep: int, carry: bool, quote: bool = False, grow: float = 0.0) -> None:
        """Task, a summary of the older turns, the last ``keep`` turns verbatim.

        ``carry``: the summary carries the previous summary's text (else it is built
        from raw turns only: a fresh summary, or the livelock incident's reset). ``quote``: it
        quotes the replaced tool outputs verbatim (extractive). ``grow``: the summary
        also re-derives constraints worth this share of the budget left under the trigger
        (the livelock incident's residual: each compaction buys fewer turns than the last).
        """
        cut = max(0, len(self.turns) - keep)
        region, tail = self.turns[:cut], self.turns[cut:]
        mode = "extractive" if quote else "lossy"
        self._record(mode, "rewrite", None, kept_turns=len(tail))
        generation = self._summarize(region, carry, quote)
        self.run.truths[-1].generation = generation
        self._dropped([] if quote else region)
        self.head = [self.task_item, self.wire.user(str(self.summary))]
        self.turns = tail
        if grow > 0:
            free = max(0, self.run.trigger_tokens - self.next_tokens())
            self.summary = f"{self.summary}\n{self.text.padding(int(grow * free))}"
            self.head[1] = self.wire.user(self.summary)

    def replace_all(self, carry: bool) -> None:
        """The whole history, task included, replaced by one summary message."""
        self._record("lossy", "whole", None)
        self.run.truths[-1].generation = self._summarize(self.turns, carry)
        self._dropped(self.turns)
        self.head = [self.wire.user(str(self.summary))]
        self.turns = []

    def clear(self, count: int, shorten: bool) -> None:
        """Clear (or cut to a quarter) the oldest ``count`` tool results in place."""
        key = self.wire.result_key()
        targets = [t for t in self.turns[:-2] if _output_of(t.result, key) != CLEARED]
        targets = [t for t in targets if len(_output_of(t.result, key)) > 200][:count]
        if not targets:
            return
        self._record("prune", "clear", None, style=None)
        self._dropped(targets)
        for turn in targets:
            text = _output_of(turn.result, key)
            _set_output(turn.result, key, text[: len(text) // 4] if shorten else CLEARED)

    def server_compaction(self, failed: bool = False) -> None:
        """The next call carries a server-side compaction of everything since the last one."""
        since = [t for t in self.turns if t.call > self.run.last_server_call.get(self.name, 0)]
        self.run.fail_next = failed
        visible = self.wire.name == "anthropic" and not failed
        self._record("server", "server", None, style=self.style if visible else None, failed=failed)
        previous = (self.summary, self.generation)
        text = summary(self.style, self.task, [t.fact for t in since])
        text = carried(self.summary, text)
        if failed:
            self.run.truths[-1].generation = None
        else:
            self.run.truths[-1].generation = 0 if previous[1] is None else previous[1] + 1
            self.summary, self.generation = text, self.run.truths[-1].generation
            self.run.last_server_call[self.name] = self.calls + 1
        self.step(server_summary=text)
        self.run.fail_next = False
        # Dropped from the call after the one that compacted (the first to see the summary).
        self._dropped([] if failed else since)


def _output_of(result: Item, key: str) -> str:
    if key == "content" and isinstance(result.get("content"), list):
        return str(result["content"][0].get("content", ""))
    return str(result.get(key, ""))


def _set_output(result: Item, key: str, text: str) -> None:
    """Mutate the tool result dict the history holds (the same object, changed in place)."""
    if key == "content" and isinstance(result.get("content"), list):
        result["content"][0]["content"] = text
    else:
        result[key] = text
