"""Compactions inferred from other instrumentations' GenAI telemetry, for the shared engine.

Another instrumentation's inference spans (``otlp.dialects``) say nothing of
compactions; what they say is each call's context, and, with content captured,
what it sent. Per conversation, in order, :class:`CallInference` turns each call
into the engine inputs our own spans would have given (docs/processor.md,
"Compactions inferred from GenAI telemetry"):

* a **summarizer-shaped call** (an operation name that says so; no tools offered
  where the conversation's calls offered some; a system prompt other than the
  conversation's; a last user message asking for a summary) is the next
  compaction's cost (a ``SUMMARIZER`` item), not a turn;
* an agent call after such calls is the first call after a **compaction**
  (``summarizer_call``), whatever its size: one that fell by nothing is judged
  ineffective by the engine, as for our own spans;
* with no content to tell a summarizer by, a call at pressure that asked for no
  tool is one when its input is smaller than the last call's (a side call), else it
  is held until the next call: one that does not continue it (a smaller input)
  makes it a summarizer's (``uncarried_reply``), one that does makes it a turn;
* without a summarizer call, a compaction is inferred when the context fell by
  :data:`FALL_SHARE` or more from a call at pressure (``token_fall``), or when the
  conversation says so (``gen_ai.conversation.compacted``, a ``compaction`` part);
* with content captured, a fall is no compaction when the task message changed
  with no summarizer call (a new task) or when the message list did not shrink
  (tool outputs cleared in place: pruning);
* the same call seen twice (two instrumentations, one ``gen_ai.response.id``) counts once.

Findings on inferred compactions say which evidence and which conversation key
they rest on (``annotate``).
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from dataclasses import dataclass

from otel_compaction._bounded import BoundedMap
from otel_compaction.config import Settings
from otel_compaction.model import (
    CompactionAnalysis,
    CompactionObservation,
    SummarizerCost,
)
from otel_compaction.otlp.dialects import STOP_REASONS, CallFacts
from otel_compaction.otlp.extract import Item, ItemKind
from otel_compaction.semconv import CompactionMode, CompactionSource, Evidence
from otel_compaction.signals.windows import context_window

FALL_SHARE = 0.5
"""A call whose context is at most (1 - this) of the previous call's, that one at pressure,
follows a compaction (a pruning that clears more than half also reads as one without content)."""
LOOSE_GAP_SECONDS = 300.0
"""Calls with no conversation key and no parent span (every call its own trace) are grouped
by service and model; a pause longer than this starts a new conversation."""
CARRIED_REPLY = 0.9
"""Share of a held call's reply that the next call's input must add to its input for the
held call to be a step of the conversation (a follow-up carries it whole)."""
MAX_RESPONSE_IDS = 262_144
SUMMARIZE = re.compile(r"\b(summari[sz]e|compact|condense)\b", re.IGNORECASE)
"""A last user message asking for this is a summarizer's request (content captured)."""
_SUMMARIZER_OPERATIONS = re.compile(r"summar|compact|condens", re.IGNORECASE)


@dataclass(slots=True)
class _Conversation:
    """What the inference remembers of one conversation's calls."""

    context: int | None = None
    """The last agent call's context."""
    at_pressure: bool = False
    tools_seen: bool = False
    system_key: int | None = None
    task_key: int | None = None
    messages: int | None = None
    summarizer: Evidence | None = None
    """Why the calls since the last agent call were a summarizer's (None: there were none)."""
    summary: str | None = None
    compacted: bool = False
    held: Item | None = None
    """A call that asked for no tool, held until the next call says whether it was a turn."""


class CallInference:
    """Calls of other instrumentations → turns, summarizer costs and inferred compactions."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._conversations: BoundedMap[str, _Conversation] = BoundedMap(settings.max_conversations)
        self._responses: BoundedMap[str, bool] = BoundedMap(MAX_RESPONSE_IDS)
        self._evidence: BoundedMap[str, str] = BoundedMap(settings.max_conversations)

    def expand(self, conversation_id: str, item: Item) -> list[Item]:
        """The engine inputs of one call, in order (empty: a call already counted, or held)."""
        call = item.call
        assert call is not None
        if call.response_id is not None:
            if self._responses.peek(call.response_id) is not None:
                return []  # the same call from a second instrumentation
            self._responses.put(call.response_id, True)
        conversation = self._conversations.get(conversation_id)
        if conversation is None:
            conversation = _Conversation()
            self._conversations.put(conversation_id, conversation)
        out: list[Item] = []
        held, conversation.held = conversation.held, None
        if held is not None:
            assert held.call is not None
            if _continues(call, held.call):
                out += self._agent_call(conversation_id, conversation, held)  # a turn
            else:
                out.append(self._summarizer(conversation, held, Evidence.UNCARRIED_REPLY))
        shape = _summarizer_shape(conversation, call)
        if shape is not None:
            out.append(self._summarizer(conversation, item, shape))
        elif _undecided(conversation, call):
            conversation.held = item
        else:
            out += self._agent_call(conversation_id, conversation, item)
        return out

    def flush(self) -> list[tuple[str, list[Item]]]:
        """The held calls, as turns (no next call will come: shutdown, end of a file).

        Returned as copies with no batch: each was counted in the group it came in."""
        groups = []
        for conversation_id in list(self._conversations.keys()):
            conversation = self._conversations.peek(conversation_id)
            if conversation is None or conversation.held is None:
                continue
            held, conversation.held = conversation.held, None
            items = self._agent_call(conversation_id, conversation, held)
            ready = [dataclasses.replace(i, batch=None, expanded=True) for i in items]
            groups.append((conversation_id, ready))
        return groups

    def _agent_call(
        self, conversation_id: str, conversation: _Conversation, item: Item
    ) -> list[Item]:
        call = item.call
        assert call is not None
        evidence = _evidence(conversation, call)
        out = []
        if evidence is not None:
            out.append(self._compaction(conversation_id, conversation, item, evidence))
        self._remember(conversation, call, item)
        out.append(item)
        return out

    def _summarizer(self, conversation: _Conversation, item: Item, why: Evidence) -> Item:
        call = item.call
        assert call is not None
        conversation.summarizer = why
        if call.output_text:
            conversation.summary = call.output_text
        item.kind = ItemKind.SUMMARIZER
        item.summarizer = SummarizerCost(1, call.context_tokens, call.output_tokens or 0)
        item.turn = None
        return item

    def _compaction(
        self, conversation_id: str, conversation: _Conversation, item: Item, evidence: Evidence
    ) -> Item:
        call = item.call
        assert call is not None
        compaction_id = f"inferred-{item.span_id.hex()}"
        observation = CompactionObservation(
            source=CompactionSource.INFERRED,
            mode=CompactionMode.LOSSY,
            trigger=evidence.value,
            tokens_before=conversation.context,
            summary_text=conversation.summary,
            compaction_id=compaction_id,
            timestamp=item.time_ns / 1e9 or None,
        )
        self._evidence.put(compaction_id, _describe(evidence, call.key_source))
        conversation.summarizer = None
        conversation.summary = None
        return Item(
            conversation_id=conversation_id,
            kind=ItemKind.COMPACTION,
            turn_index=None,
            time_ns=item.time_ns,
            trace_id=item.trace_id,
            span_id=item.span_id,
            dedupe_key=zlib.crc32(compaction_id.encode()) << 1 | 1,
            compaction=observation,
            provider=item.provider,
            # Enrich mode flags the first call that saw the compacted context.
            target=item.target,
            position=item.position,
            batch=item.batch,
        )

    def _remember(self, conversation: _Conversation, call: CallFacts, item: Item) -> None:
        assert item.turn is not None
        window = item.turn.window or context_window(item.turn.model, self.settings)
        conversation.at_pressure = call.context_tokens >= self.settings.pressure_threshold * window
        conversation.context = call.context_tokens
        conversation.tools_seen = conversation.tools_seen or bool(call.tools_offered)
        if call.system_key is not None and conversation.system_key is None:
            conversation.system_key = call.system_key
        if call.task_key is not None:
            conversation.task_key = call.task_key
        conversation.messages = call.message_count
        conversation.compacted = call.compacted

    def annotate(self, analysis: CompactionAnalysis | None) -> CompactionAnalysis | None:
        """``analysis`` with each finding's reason naming the evidence of an inferred compaction."""
        if analysis is None or not analysis.findings:
            return analysis
        said = self._evidence.peek(analysis.record.compaction_id)
        if said is None:
            return analysis
        findings = tuple(
            f if said in f.reason else dataclasses.replace(f, reason=f"{f.reason} ({said})")
            for f in analysis.findings
        )
        return dataclasses.replace(analysis, findings=findings)


def _describe(evidence: Evidence, source: str) -> str:
    what = {
        Evidence.SUMMARIZER_CALL: "a summarizer-shaped call (no tools, another system prompt, "
        "a summarize instruction or operation) before this call",
        Evidence.UNCARRIED_REPLY: "a call that asked for no tool and that the next call did not "
        "continue (a summarizer's) before this call",
        Evidence.TOKEN_FALL: f"the context fell by {FALL_SHARE:.0%} or more after a call at "
        "pressure",
        Evidence.COMPACTED_FLAG: "the span says the conversation was compacted",
    }[evidence]
    return f"compaction inferred from GenAI telemetry: {what}; calls grouped by {source}"


def _summarizer_shape(conversation: _Conversation, call: CallFacts) -> Evidence | None:
    """Why ``call`` is a summarizer's, by its own shape; None when it does not look like one."""
    if call.operation is not None and _SUMMARIZER_OPERATIONS.search(call.operation):
        return Evidence.SUMMARIZER_CALL
    if conversation.context is None:
        return None  # a conversation's first call is its own
    if call.finish is not None and call.finish not in STOP_REASONS:
        return None  # it asked for a tool: an agent's step
    if call.tools_offered is False and conversation.tools_seen:
        return Evidence.SUMMARIZER_CALL
    known = conversation.system_key
    if known is not None and call.system_key is not None and call.system_key != known:
        return Evidence.SUMMARIZER_CALL
    if call.last_user is not None and SUMMARIZE.search(call.last_user[:200]):
        return Evidence.SUMMARIZER_CALL
    if _undecided(conversation, call) and call.context_tokens < conversation.context:
        # No content to tell by: a call at pressure that asked for no tool and does not
        # continue the history (its input is smaller) is a side call, a summarizer's.
        return Evidence.UNCARRIED_REPLY
    return None


def _continues(call: CallFacts, held: CallFacts) -> bool:
    """Whether ``call``'s input holds ``held``'s input and reply (:data:`CARRIED_REPLY` of it,
    token counts being estimates): ``held`` was a step of the conversation."""
    reply = CARRIED_REPLY * (held.output_tokens or 0)
    return call.context_tokens >= held.context_tokens + reply


def _no_tool(call: CallFacts) -> bool:
    return call.finish is not None and call.finish in STOP_REASONS


def _undecided(conversation: _Conversation, call: CallFacts) -> bool:
    """A call at pressure that asked for no tool, with no content to tell a summarizer by:
    the next call says (it continues this call's input, or it does not)."""
    return _no_tool(call) and call.system_key is None and conversation.at_pressure


def _evidence(conversation: _Conversation, call: CallFacts) -> Evidence | None:
    if conversation.summarizer is not None:
        return conversation.summarizer
    if call.compacted and not conversation.compacted:
        return Evidence.COMPACTED_FLAG
    before = conversation.context
    if before is None:
        return None
    if call.task_key is not None and conversation.task_key is not None:
        if call.task_key != conversation.task_key:
            return None  # a new task, and no summarizer call before it
        dropped = conversation.messages is not None and (call.message_count or 0) < (
            conversation.messages
        )
        if call.message_count is not None and not dropped:
            return None  # nothing dropped: edited in place (pruned), or grown
    if conversation.at_pressure and call.context_tokens <= before * (1 - FALL_SHARE):
        return Evidence.TOKEN_FALL
    return None


class LooseGrouper:
    """Conversations for calls no key holds together: by service and model, split by a gap."""

    def __init__(self, limit: int, gap: float = LOOSE_GAP_SECONDS) -> None:
        self.gap = gap
        self._groups: BoundedMap[str, tuple[int, float]] = BoundedMap(limit)

    def key(self, item: Item) -> str:
        """The conversation id of a loose call (its group and the group's epoch)."""
        call = item.call
        assert call is not None
        group = f"{call.service or '-'}|{call.model or '-'}"
        seconds = item.time_ns / 1e9
        known = self._groups.peek(group)
        epoch = 0
        if known is not None:
            epoch, last = known
            if seconds - last > self.gap:
                epoch += 1
            seconds = max(seconds, last)
        self._groups.put(group, (epoch, seconds))
        return f"{group}|{epoch}"
