"""Every telemetry name otel-compaction emits, defined once.

Attribute keys, span and event names, metric names, units and histogram bucket
boundaries live here and nowhere else; ``docs/semantic-conventions.md`` documents
each of them, and a test fails when code, a dashboard or an alert rule uses a
name that is not defined here.

Official GenAI semantic-convention names are used where one exists, taken from the
``opentelemetry-semantic-conventions`` package and re-exported here (they are in
Development status; keeping them in one module makes a rename a one-line change).
Everything else is in the ``compaction.`` namespace. Every value set an attribute or a
metric label takes (sources, modes, triggers, conversation-id sources, error stages...)
is a ``StrEnum`` here, and a test checks that what the code emits is a member.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Final

from opentelemetry.semconv._incubating.attributes.event_attributes import EVENT_NAME as EVENT_NAME
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_AGENT_NAME as GEN_AI_AGENT_NAME,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_CONVERSATION_ID as GEN_AI_CONVERSATION_ID,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_INPUT_MESSAGES as GEN_AI_INPUT_MESSAGES,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_OPERATION_NAME as GEN_AI_OPERATION_NAME,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_OUTPUT_MESSAGES as GEN_AI_OUTPUT_MESSAGES,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_PROVIDER_NAME as GEN_AI_PROVIDER_NAME,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_REQUEST_MAX_TOKENS as GEN_AI_REQUEST_MAX_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_REQUEST_MODEL as GEN_AI_REQUEST_MODEL,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_REQUEST_TEMPERATURE as GEN_AI_REQUEST_TEMPERATURE,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_RESPONSE_FINISH_REASONS as GEN_AI_RESPONSE_FINISH_REASONS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_RESPONSE_ID as GEN_AI_RESPONSE_ID,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_RESPONSE_MODEL as GEN_AI_RESPONSE_MODEL,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_SYSTEM_INSTRUCTIONS as GEN_AI_SYSTEM_INSTRUCTIONS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_TOKEN_TYPE as GEN_AI_TOKEN_TYPE,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_TOOL_DEFINITIONS as GEN_AI_TOOL_DEFINITIONS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS as GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_USAGE_COMPLETION_TOKENS as GEN_AI_USAGE_COMPLETION_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_USAGE_INPUT_TOKENS as GEN_AI_USAGE_INPUT_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_USAGE_OUTPUT_TOKENS as GEN_AI_USAGE_OUTPUT_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_USAGE_PROMPT_TOKENS as GEN_AI_USAGE_PROMPT_TOKENS,
)
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GenAiOperationNameValues,
    GenAiProviderNameValues,
    GenAiTokenTypeValues,
)
from opentelemetry.semconv._incubating.attributes.session_attributes import SESSION_ID as SESSION_ID
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as _gen_ai_metrics
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE as ERROR_TYPE
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS as SERVER_ADDRESS
from opentelemetry.semconv.attributes.server_attributes import SERVER_PORT as SERVER_PORT
from opentelemetry.semconv.attributes.service_attributes import SERVICE_NAME as SERVICE_NAME

# --------------------------------------------------------------------------- #
# Official GenAI semantic conventions (and general ones) that we use.
# --------------------------------------------------------------------------- #

SEMCONV_VERSION: Final = "1.44.0"
"""The OpenTelemetry semantic-conventions release whose names we follow."""
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The ``schema_url`` of every tracer and meter we create (see docs/semantic-conventions.md)."""

# The official keys come from the semantic-conventions package (re-exported here, so the
# rest of the code imports every name from this module); literals only for the keys the
# package (``opentelemetry-semantic-conventions>=0.61b0``) lacks, listed in
# docs/semantic-conventions.md under "Version".
GEN_AI_CONVERSATION_COMPACTED: Final = "gen_ai.conversation.compacted"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"

# Values of gen_ai.operation.name, gen_ai.provider.name and gen_ai.token.type we emit.
OPERATION_CHAT: Final[str] = GenAiOperationNameValues.CHAT.value
OPERATION_INVOKE_AGENT: Final[str] = GenAiOperationNameValues.INVOKE_AGENT.value
PROVIDER_ANTHROPIC: Final[str] = GenAiProviderNameValues.ANTHROPIC.value
PROVIDER_OPENAI: Final[str] = GenAiProviderNameValues.OPENAI.value
TOKEN_TYPE_INPUT: Final[str] = GenAiTokenTypeValues.INPUT.value
TOKEN_TYPE_OUTPUT: Final[str] = GenAiTokenTypeValues.OUTPUT.value

# The environment variable of the GenAI conventions that gates content capture.
ENV_CAPTURE_MESSAGE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# --------------------------------------------------------------------------- #
# compaction.* attributes on inference spans.
# --------------------------------------------------------------------------- #

CONVERSATION_ID: Final = "compaction.conversation.id"
CONVERSATION_ID_SOURCE: Final = "compaction.conversation.id_source"
TURN_INDEX: Final = "compaction.turn.index"
CONTEXT_TOKENS: Final = "compaction.context.tokens"
CONTEXT_WINDOW: Final = "compaction.context.window"
CONTEXT_NEW_CONTENT_TOKENS: Final = "compaction.context.new_content_tokens"
CONTEXT_FIXED_TOKENS: Final = "compaction.context.fixed_tokens"
PRESSURE_TOKEN_FRACTION: Final = "compaction.pressure.token_fraction"
PRESSURE_ATTENTION_DECAY: Final = "compaction.pressure.attention_decay"
PHASE_NAME: Final = "compaction.phase.name"
PHASE_CONFIDENCE: Final = "compaction.phase.confidence"
PHASE_ENTROPY: Final = "compaction.phase.entropy"
PHASE_TRANSITION_LIKELIHOOD: Final = "compaction.phase.transition_likelihood"
PHASE_SOURCE: Final = "compaction.phase.source"
PHASE_UNKNOWN: Final = "unknown"
"""``compaction.phase.name`` of a turn whose phase has too little evidence yet."""
# A reported phase distribution, names and probabilities aligned (only when the
# source is "reported"): lets the processor repeat the transition likelihood.
PHASE_NAMES: Final = "compaction.phase.names"
PHASE_DISTRIBUTION: Final = "compaction.phase.distribution"
TOOL_CALLS: Final = "compaction.turn.tool_calls"
TOOL_CATEGORIES: Final = "compaction.turn.tool_categories"
TOOL_CALL_KEYS: Final = "compaction.turn.tool_call_keys"
TOOL_OUTPUT_TOKENS: Final = "compaction.turn.tool_output_tokens"
ADVICE_ACTION: Final = "compaction.advice.action"

# Event compaction.phase.transition and its attributes.
EVENT_PHASE_TRANSITION: Final = "compaction.phase.transition"
PHASE_FROM: Final = "compaction.phase.from"
PHASE_TO: Final = "compaction.phase.to"

# --------------------------------------------------------------------------- #
# The compaction span.
# --------------------------------------------------------------------------- #

SPAN_COMPACTION: Final = "compaction"
COMPACTION_ID: Final = "compaction.id"
COMPACTION_SOURCE: Final = "compaction.source"
COMPACTION_TRIGGER: Final = "compaction.trigger"
COMPACTION_MODE: Final = "compaction.mode"
TOKENS_BEFORE: Final = "compaction.tokens.before"
TOKENS_AFTER: Final = "compaction.tokens.after"
TOKENS_AFTER_REPORTED: Final = "compaction.tokens.after_reported"
TOKENS_SUMMARY: Final = "compaction.tokens.summary"
TOKENS_RETAINED_TAIL: Final = "compaction.tokens.retained_tail"
TOKENS_COMPACTED: Final = "compaction.tokens.compacted"
TOKENS_DUPLICATED: Final = "compaction.tokens.duplicated"
TOKENS_CARRIED_OVER: Final = "compaction.tokens.carried_over"
TOKEN_FRACTION_AT_COMPACTION: Final = "compaction.tokens.before_fraction"
LINEAGE_PARENT_ID: Final = "compaction.lineage.parent_id"
LINEAGE_ROOT_ID: Final = "compaction.lineage.root_id"
LINEAGE_GENERATION: Final = "compaction.lineage.generation"
LINEAGE_ASSUMED: Final = "compaction.lineage.assumed"
CYCLE_INTERVAL_TURNS: Final = "compaction.cycle.interval_turns"
CYCLE_NEW_CONTENT_TOKENS: Final = "compaction.cycle.new_content_tokens"
CYCLE_NET_GROWTH_TOKENS: Final = "compaction.cycle.net_growth_tokens"
CYCLE_RESIDUAL_TOKENS: Final = "compaction.cycle.residual_tokens"
SUMMARY_SCHEMA_COVERAGE: Final = "compaction.summary.schema_coverage"
SUMMARY_MISSING_FIELDS: Final = "compaction.summary.missing_fields"
SUMMARY_FAILED: Final = "compaction.summary.failed"
SUMMARY_ERROR: Final = "compaction.summary.error"
COMPACTION_ERROR: Final = "compaction.error"
"""Metric attribute of failed compactions: the error the source names (``unknown`` if none)."""
# The summarizer's own calls, part of the compaction's cost (Claude Code's
# ``query_source="compact"`` requests): never turns of the conversation.
SUMMARIZER_CALLS: Final = "compaction.summarizer.calls"
SUMMARIZER_INPUT_TOKENS: Final = "compaction.summarizer.input_tokens"
SUMMARIZER_OUTPUT_TOKENS: Final = "compaction.summarizer.output_tokens"
SUMMARIZER_DURATION: Final = "compaction.summarizer.duration"
"""Seconds the summarizer's calls took, summed."""
SUMMARIZER_COST_USD: Final = "compaction.summarizer.cost_usd"
SUMMARY_FINGERPRINT: Final = "compaction.summary.fingerprint"
SUMMARY_TEXT: Final = "compaction.summary.text"
CONTENT_TRUNCATED: Final = "compaction.content.truncated"
FLAG_BOUNDARY: Final = "compaction.flag.boundary"
FLAG_LIVELOCK: Final = "compaction.flag.livelock"
FLAG_SHORT_RUN: Final = "compaction.flag.short_run"
FLAG_SCHEMA_GAP: Final = "compaction.flag.schema_gap"
FLAG_LOST_TASK: Final = "compaction.flag.lost_task"
FLAG_INEFFECTIVE: Final = "compaction.flag.ineffective"
FLAG_REASON: Final = "compaction.flag.reason"

# The finding span the processor emits in tap mode (child of, and linked to,
# the flagged compaction span).
SPAN_FINDING: Final = "compaction.finding"
FINDING_KIND: Final = "compaction.finding.kind"
FINDING_RULE: Final = "compaction.finding.rule"

# Rediscovery (docs/concepts.md#rediscovery): the work a compaction made the agent do
# again, known when its horizon closes, after the compaction span has ended: on a
# ``compaction.rediscovery`` span, a child of the compaction's span and linked to it.
SPAN_REDISCOVERY: Final = "compaction.rediscovery"
REDISCOVERY_CALLS: Final = "compaction.rediscovery.calls"
REDISCOVERY_TOKENS: Final = "compaction.rediscovery.tokens"
REDISCOVERY_TURNS: Final = "compaction.rediscovery.turns"
REDISCOVERY_HORIZON_TURNS: Final = "compaction.rediscovery.horizon_turns"
REDISCOVERY_TOOLS: Final = "compaction.rediscovery.tools"
REDISCOVERY_BASELINE_TOKENS: Final = "compaction.rediscovery.baseline_tokens"
REDISCOVERY_ADVICE: Final = "compaction.rediscovery.advice"

# --------------------------------------------------------------------------- #
# Attribute values.
# --------------------------------------------------------------------------- #


class CompactionSource(StrEnum):
    """Where a compaction was observed (``compaction.source``)."""

    EXPLICIT = "explicit"
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    LANGCHAIN = "langchain"
    INFERRED = "inferred"
    IMPORT = "import"


class CompactionMode(StrEnum):
    """How a compaction treated the compacted region (``compaction.mode``)."""

    LOSSY = "lossy"
    EXTRACTIVE = "extractive"
    PRUNE = "prune"
    SERVER = "server"


# --------------------------------------------------------------------------- #
# What the usage of a call that compacted counts (provider-side compaction sizes).
# --------------------------------------------------------------------------- #

COMPACTION_CALL_USAGE: Final = "compaction.call_usage"


class CallUsage(StrEnum):
    """What the usage of the call that made a provider-side compaction counts
    (``compaction.call_usage``), and so which size it gives the compaction."""

    BEFORE = "before"
    """The call's input is the context it compacted (``responses.compact``): its input
    tokens are the size before; the size after comes from the next call."""
    UNKNOWN = "unknown"
    """A call that compacted on its way (Responses ``context_management``): the vendor does
    not say whether its input tokens count the context before or after the compaction, so
    neither size is read from it; the size after comes from the next call."""


class CompactionTrigger(StrEnum):
    """Why a compaction fired (``compaction.trigger``): the values the instrumentation and
    the processor write. An agent's own trigger (Claude Code's transcripts and events,
    Codex's rollouts) and ``record_compaction(trigger=...)`` pass through as given."""

    AUTO = "auto"
    """The provider, framework or agent compacted on its own, at its threshold (an
    Anthropic server-side compaction, LangChain's summarization, Claude Code)."""
    MANUAL = "manual"
    """Fired by hand (Claude Code's ``/compact``)."""
    SUMMARIZE = "summarize"
    """An Anthropic call made to compact (the compaction is what it was asked for)."""
    COMPACT_THRESHOLD = "compact_threshold"
    """OpenAI Responses ``context_management`` compacted past its threshold."""
    RESPONSES_COMPACT = "responses.compact"
    """OpenAI's ``responses.compact`` endpoint."""
    CONTEXT_COMPACTED = "context_compacted"
    """OpenAI's cache diagnostics say the context was compacted."""
    CLEAR_TOOL_USES = "clear_tool_uses"
    """LangChain's context editing cleared tool results."""
    RUNNING_SUMMARY = "running_summary"
    """langmem's running summary replaced the history."""
    HISTORY_REWRITTEN = "history_rewritten"
    """Inferred: new text stands where turns were (a summary, with or without a tail)."""
    TOOL_OUTPUTS_CLEARED = "tool_outputs_cleared"
    """Inferred: messages kept their place and shrank (tool outputs cleared)."""
    MESSAGES_DROPPED = "messages_dropped"
    """Inferred: messages were dropped, nothing put in their place."""
    HISTORY_REPLACED = "history_replaced"
    """Inferred: user or system text replaced the whole history after a common head."""
    SUMMARIZER_CALL = "summarizer_call"
    """Inferred from a summarizer's call (no tools, another system prompt) whose answer
    the rewritten history carries."""
    TOKEN_FALL = "token_fall"
    """Inferred by the processor: the context fell sharply after a call at pressure."""
    UNCARRIED_REPLY = "uncarried_reply"
    """Inferred by the processor: a reply the next call did not carry."""
    CONVERSATION_COMPACTED = "conversation_compacted"
    """Inferred by the processor from ``gen_ai.conversation.compacted``."""


class ConversationIdSource(StrEnum):
    """How a conversation's id was found (``compaction.conversation.id_source``)."""

    EXPLICIT = "explicit"
    """``conversation()`` or an argument naming it."""
    BAGGAGE = "baggage"
    """OpenTelemetry baggage carried it."""
    CLIENT = "client"
    """The client's own option (the anthropic ``conversation_id``, OpenAI ``conversation=``)."""
    CHAINED = "chained"
    """OpenAI ``previous_response_id`` chains the call to an earlier one."""
    FRAMEWORK = "framework"
    """A framework's thread (LangChain/LangGraph, LiteLLM, aider)."""
    INFERRED = "inferred"
    """Inferred from the history: the application gave none."""


class PhaseSource(StrEnum):
    """Where the phase of a turn came from (``compaction.phase.source``)."""

    REPORTED = "reported"
    INFERRED = "inferred"


class FindingKind(StrEnum):
    """What a detector found (``compaction.finding.kind`` and the JSON report)."""

    BOUNDARY_COMPACTION = "boundary_compaction"
    REEXPANSION_LIVELOCK = "reexpansion_livelock"
    SHORT_RUN_COMPACTION = "short_run_compaction"
    SUMMARY_SCHEMA_COVERAGE = "summary_schema_coverage"
    LOST_TASK = "lost_task"
    INEFFECTIVE_COMPACTION = "ineffective_compaction"


class AdviceAction(StrEnum):
    """What the policy advisor recommends (``compaction.advice.action``)."""

    CONTINUE = "continue"
    COMPACT = "compact"
    DEFER = "defer"
    COMPACT_EXTRACTIVE = "compact_extractive"
    RESET_LINEAGE = "reset_lineage"
    PRUNE_TOOL_OUTPUTS = "prune_tool_outputs"


# --- Summary templates (issue 32): what a summary's schema coverage is judged against.
SUMMARY_TEMPLATE: Final = "compaction.summary.template"


class SummaryTemplateName(StrEnum):
    """The template a summary was judged against (``compaction.summary.template``): a known
    summarizer's, the user's pinned schema, or ``unknown`` (not judged)."""

    CLAUDE_CODE = "claude_code"
    LANGCHAIN = "langchain"
    PYDANTIC_AI = "pydantic_ai"
    OPENHANDS = "openhands"
    STRANDS = "strands"
    PINNED = "pinned"
    UNKNOWN = "unknown"


SCHEMA_TEMPLATE_MODES: Final = ("auto", "off")
"""Values of the ``schema_template`` setting besides a template's name (``pinned``
included): recognise the known template a summary follows, or judge none."""
# --- end of summary templates.


DEFAULT_PHASES: Final = ("explore", "hypothesize", "patch", "verify")

# The compaction-span flag set when a finding of each kind is raised.
FLAG_BY_KIND: Final = {
    FindingKind.BOUNDARY_COMPACTION: FLAG_BOUNDARY,
    FindingKind.REEXPANSION_LIVELOCK: FLAG_LIVELOCK,
    FindingKind.SHORT_RUN_COMPACTION: FLAG_SHORT_RUN,
    FindingKind.SUMMARY_SCHEMA_COVERAGE: FLAG_SCHEMA_GAP,
    FindingKind.LOST_TASK: FLAG_LOST_TASK,
    FindingKind.INEFFECTIVE_COMPACTION: FLAG_INEFFECTIVE,
}
# Every flag a compaction span can carry: what enrich mode replaces with its own verdicts,
# and what tells a compaction span of ours without flags (nothing found) from a flagged one.
FLAG_KEYS: Final = (*FLAG_BY_KIND.values(), FLAG_REASON)

# Values of gen_ai.operation.name that are one LLM call (one turn); spans of other
# operations (invoke_agent, execute_tool, embeddings) are not turns.
INFERENCE_OPERATIONS: Final = (
    OPERATION_CHAT,
    GenAiOperationNameValues.TEXT_COMPLETION.value,
    GenAiOperationNameValues.GENERATE_CONTENT.value,
)

# --------------------------------------------------------------------------- #
# Read, never emitted: Claude Code's and Codex's own event keys. Their reader is
# otel_compaction/otlp/agent_events.py (and docs/semantic-conventions.md, "Read, not
# emitted: Claude Code's own events"); the names are the agents', not ours.
# --------------------------------------------------------------------------- #

# Claude Code's own OpenTelemetry log events (CLAUDE_CODE_ENABLE_TELEMETRY=1),
# read by the processor. Their attribute keys are Claude Code's, not ours.
CLAUDE_CODE_EVENT_COMPACTION: Final = "claude_code.compaction"
CLAUDE_CODE_EVENT_API_REQUEST: Final = "claude_code.api_request"
CLAUDE_CODE_MODEL: Final = "model"
CLAUDE_CODE_INPUT_TOKENS: Final = "input_tokens"
CLAUDE_CODE_CACHE_READ_TOKENS: Final = "cache_read_tokens"
CLAUDE_CODE_CACHE_CREATION_TOKENS: Final = "cache_creation_tokens"
CLAUDE_CODE_TRIGGER: Final = "trigger"
CLAUDE_CODE_SUCCESS: Final = "success"
CLAUDE_CODE_PRE_TOKENS: Final = "pre_tokens"
CLAUDE_CODE_POST_TOKENS: Final = "post_tokens"
CLAUDE_CODE_ERROR: Final = "error"
CLAUDE_CODE_OUTPUT_TOKENS: Final = "output_tokens"
CLAUDE_CODE_DURATION_MS: Final = "duration_ms"
CLAUDE_CODE_COST_USD: Final = "cost_usd"
CLAUDE_CODE_QUERY_SOURCE: Final = "query_source"
"""Which part of Claude Code made an ``api_request``: the agent's own loop, the
summarizer of a compaction, a sub-agent or a side query."""
CLAUDE_CODE_AGENT_SOURCES: Final = ("sdk", "repl_main_thread")
"""``query_source`` values of the agent's own calls (``repl_main_thread:...`` too): turns."""
CLAUDE_CODE_COMPACT_SOURCE: Final = "compact"
"""``query_source`` of the summarizer's call inside a compaction (its cost, not a turn)."""

# Claude Code's event numbering: what tells two of its events apart when they carry no time.
CLAUDE_CODE_EVENT_SEQUENCE: Final = "event.sequence"
"""Claude Code's running number of a session's events; names a compaction without a time."""

# Codex CLI's own OpenTelemetry log events (``[otel]`` in ~/.codex/config.toml),
# read by the processor; their keys are Codex's. Only ``codex.sse_event`` with
# ``event.kind = response.completed`` says anything about a call's tokens.
CODEX_EVENT_SSE: Final = "codex.sse_event"
CODEX_EVENT_KIND: Final = "event.kind"
CODEX_RESPONSE_COMPLETED: Final = "response.completed"
CODEX_CONVERSATION_ID: Final = "conversation.id"
CODEX_MODEL: Final = "model"
CODEX_INPUT_TOKENS: Final = "input_token_count"
CODEX_OUTPUT_TOKENS: Final = "output_token_count"
CODEX_CACHED_TOKENS: Final = "cached_token_count"

# The agents' tool events, read for rediscovery (otlp.agent_tools): each call's tool
# name, its id, its input and the size of its result. Claude Code sends the input
# (``tool_input``) only with OTEL_LOG_TOOL_DETAILS=1; Codex always sends ``arguments``.
CLAUDE_CODE_EVENT_TOOL_DECISION: Final = "claude_code.tool_decision"
CLAUDE_CODE_EVENT_TOOL_RESULT: Final = "claude_code.tool_result"
CLAUDE_CODE_TOOL_NAME: Final = "tool_name"
CLAUDE_CODE_TOOL_USE_ID: Final = "tool_use_id"
CLAUDE_CODE_TOOL_INPUT: Final = "tool_input"
CLAUDE_CODE_TOOL_RESULT_BYTES: Final = "tool_result_size_bytes"
CODEX_EVENT_TOOL_DECISION: Final = "codex.tool_decision"
CODEX_EVENT_TOOL_RESULT: Final = "codex.tool_result"
CODEX_CALL_ID: Final = "call_id"
CODEX_TOOL_ARGUMENTS: Final = "arguments"
CODEX_TOOL_OUTPUT: Final = "output"
# --- end of Claude Code's and Codex's keys.

# Marker appended to captured content cut at Settings.content_max_chars.
TRUNCATION_MARKER: Final = "…[truncated {omitted} chars]"

# --------------------------------------------------------------------------- #
# Metrics.
# --------------------------------------------------------------------------- #


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric instrument: OTel name, kind, unit, description, buckets, labels.

    ``prometheus`` is the name Prometheus sees after the Collector's (and the
    spec's) translation; dashboards and alert rules must use that name.
    """

    name: str
    kind: str  # "counter" | "histogram" | "gauge" | "updowncounter"
    unit: str
    description: str
    attributes: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None

    @property
    def prometheus(self) -> str:
        """The Prometheus metric family name (without ``_bucket``/``_sum``/``_count``)."""
        return prometheus_name(self.name, self.unit, self.kind)


_UNIT_SUFFIXES: Final = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}


def prometheus_name(name: str, unit: str, kind: str) -> str:
    """Translate an OTel metric name to the name Prometheus stores.

    Follows the Collector's translation: dots become underscores, known units
    add a suffix (curly-brace units are dropped), monotonic sums get ``_total``.
    We never use unit ``1`` (the SDK and the Collector disagree on ``_ratio``).
    """
    base = name.replace(".", "_")
    suffix = _UNIT_SUFFIXES.get(unit)
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    if kind == "counter" and not base.endswith("_total"):
        base = f"{base}_total"
    return base


def prometheus_label(attribute: str) -> str:
    """The Prometheus label name of an attribute key."""
    return attribute.replace(".", "_")


TOKEN_USAGE_BUCKETS: Final = (
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
    1048576.0, 4194304.0, 16777216.0, 67108864.0,
)  # fmt: skip
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
FRACTION_BUCKETS: Final = (
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.95, 0.98, 1.0,
)  # fmt: skip
INTERVAL_BUCKETS: Final = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 30.0, 50.0)
RECLAIMED_TOKEN_BUCKETS: Final = (
    0.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 50000.0, 100000.0, 200000.0, 500000.0,
)  # fmt: skip
RESIDUAL_TOKEN_BUCKETS: Final = (0.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0)
GENERATION_BUCKETS: Final = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0)

METRIC_TOKEN_USAGE: Final = MetricSpec(
    _gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
    "histogram",
    "{token}",
    "Number of input and output tokens used per call.",
    (GEN_AI_OPERATION_NAME, GEN_AI_PROVIDER_NAME, GEN_AI_REQUEST_MODEL, GEN_AI_TOKEN_TYPE),
    TOKEN_USAGE_BUCKETS,
)
METRIC_OPERATION_DURATION: Final = MetricSpec(
    _gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
    "histogram",
    "s",
    "Duration of a GenAI operation.",
    (GEN_AI_OPERATION_NAME, GEN_AI_PROVIDER_NAME, GEN_AI_REQUEST_MODEL, ERROR_TYPE),
    DURATION_BUCKETS,
)
METRIC_COMPACTIONS: Final = MetricSpec(
    "compaction.compactions",
    "counter",
    "{compaction}",
    "Compactions observed, by source and mode.",
    (COMPACTION_SOURCE, COMPACTION_MODE),
)
METRIC_FAILED_COMPACTIONS: Final = MetricSpec(
    "compaction.compactions.failed",
    "counter",
    "{compaction}",
    "Compactions whose summary step failed, by source and the error the source names.",
    (COMPACTION_SOURCE, COMPACTION_ERROR),
)
METRIC_FINDINGS: Final = MetricSpec(
    "compaction.findings",
    "counter",
    "{finding}",
    "Detector findings, by kind.",
    (FINDING_KIND,),
)
METRIC_PHASE_TRANSITIONS: Final = MetricSpec(
    "compaction.phase.transitions",
    "counter",
    "{transition}",
    "Task-phase changes, by from and to phase.",
    (PHASE_FROM, PHASE_TO, PHASE_SOURCE),
)
METRIC_TOKEN_FRACTION: Final = MetricSpec(
    "compaction.pressure.token_fraction",
    "histogram",
    "{fraction}",
    "Context tokens as a fraction of the model's window, per inference call.",
    (GEN_AI_PROVIDER_NAME,),
    FRACTION_BUCKETS,
)
METRIC_COMPACTION_TOKEN_FRACTION: Final = MetricSpec(
    "compaction.tokens.before_fraction",
    "histogram",
    "{fraction}",
    "Context tokens as a fraction of the window when a compaction fired.",
    (COMPACTION_SOURCE, COMPACTION_MODE),
    FRACTION_BUCKETS,
)
METRIC_INTERVAL: Final = MetricSpec(
    "compaction.cycle.interval",
    "histogram",
    "{turn}",
    "Turns between a compaction and the previous one in the same conversation.",
    (COMPACTION_SOURCE,),
    INTERVAL_BUCKETS,
)
METRIC_RECLAIMED: Final = MetricSpec(
    "compaction.tokens.reclaimed",
    "histogram",
    "{token}",
    "Tokens a compaction removed from the context (before minus after).",
    (COMPACTION_SOURCE, COMPACTION_MODE),
    RECLAIMED_TOKEN_BUCKETS,
)
METRIC_REDISCOVERY: Final = MetricSpec(
    "compaction.rediscovery.tokens",
    "histogram",
    "{token}",
    "Tokens of the tool results an agent fetched again after a compaction, over the "
    "rediscovery horizon (docs/concepts.md#rediscovery).",
    (),
    RECLAIMED_TOKEN_BUCKETS,
)
METRIC_RESIDUAL: Final = MetricSpec(
    "compaction.cycle.residual",
    "histogram",
    "{token}",
    "Re-expansion residual per cycle: net context growth minus new task content, floored at 0.",
    (COMPACTION_SOURCE,),
    RESIDUAL_TOKEN_BUCKETS,
)
METRIC_GENERATION: Final = MetricSpec(
    "compaction.lineage.generation",
    "histogram",
    "{generation}",
    "Lineage generation of each compaction (0 = a fresh lineage).",
    (COMPACTION_SOURCE,),
    GENERATION_BUCKETS,
)
METRIC_LIVELOCKED: Final = MetricSpec(
    "compaction.conversations.livelocked",
    "gauge",
    "{conversation}",
    "Conversations in re-expansion livelock: flagged and not yet recovered or reset.",
)
METRIC_ACTIVE: Final = MetricSpec(
    "compaction.conversations.active",
    "gauge",
    "{conversation}",
    "Conversations currently tracked (not yet expired).",
)
METRIC_INSTRUMENTATION_ERRORS: Final = MetricSpec(
    "compaction.instrumentation.errors",
    "counter",
    "{error}",
    "Internal errors the instrumentation caught and swallowed, by stage.",
    ("compaction.error.stage",),
)
METRIC_PROCESSOR_RECEIVED: Final = MetricSpec(
    "compaction.processor.received",
    "counter",
    "{item}",
    "Spans, log records and data points the processor accepted, by signal.",
    ("compaction.processor.signal", "compaction.processor.transport"),
)
METRIC_PROCESSOR_REJECTED: Final = MetricSpec(
    "compaction.processor.rejected",
    "counter",
    "{item}",
    "Requests or items the processor refused, by signal and reason.",
    ("compaction.processor.signal", "compaction.processor.reason"),
)
METRIC_PROCESSOR_DROPPED: Final = MetricSpec(
    "compaction.processor.dropped",
    "counter",
    "{item}",
    "Accepted items the processor could not deliver downstream, by reason.",
    ("compaction.processor.reason",),
)
METRIC_PROCESSOR_FORWARDED: Final = MetricSpec(
    "compaction.processor.forwarded",
    "counter",
    "{item}",
    "Items forwarded downstream (enrich mode) or emitted (findings, tap mode).",
    ("compaction.processor.signal",),
)
METRIC_PROCESSOR_SHED: Final = MetricSpec(
    "compaction.processor.connections.shed",
    "counter",
    "{connection}",
    "HTTP connections the processor closed or refused to protect the others, by reason.",
    ("compaction.processor.reason",),
)
METRIC_PROCESSOR_QUEUE: Final = MetricSpec(
    "compaction.processor.queue.size",
    "gauge",
    "{batch}",
    "Batches waiting in the persistent forwarding queue.",
)
METRIC_PROCESSOR_SNAPSHOT_DISCARDED: Final = MetricSpec(
    "compaction.processor.snapshot.discarded",
    "counter",
    "{snapshot}",
    "State snapshots found at start-up and not used (the replica started clean), by reason.",
    ("compaction.processor.snapshot.reason",),
)
METRIC_PROCESSOR_SNAPSHOT_WRITE_ERRORS: Final = MetricSpec(
    "compaction.processor.snapshot.write_errors",
    "counter",
    "{error}",
    "State snapshots that could not be written (the previous snapshot stays in place).",
)
METRIC_PROCESSOR_UNREAD_SPANS: Final = MetricSpec(
    "compaction.processor.unread_spans",
    "counter",
    "{span}",
    "Other instrumentations' inference spans the processor could not use (no input token "
    "count), by dialect (since the process started).",
    ("compaction.processor.dialect",),
)

ERROR_STAGE: Final = "compaction.error.stage"


class ErrorStage(StrEnum):
    """Where the instrumentation caught its own error (``compaction.error.stage``)."""

    REQUEST = "request"
    """Reading an LLM call's arguments, before the call."""
    RESPONSE = "response"
    """Reading the call's response."""
    STREAM = "stream"
    """Reading a streamed response's events."""
    ANALYSIS = "analysis"
    """The engine (signals, lineage, detectors) on a finished call."""
    COMPACTION = "compaction"
    """Recording a compaction (``record_compaction``, ``compaction()`` blocks)."""
    CONTEXT = "context"
    """Scoping calls to a conversation (``conversation()``, frameworks' hooks)."""
    CALLBACK = "callback"
    """A LangChain callback."""
    ADVICE = "advice"
    """The policy advisor (``otel_compaction.policy``)."""


ERROR_STAGES: Final = tuple(ErrorStage)
"""Every error stage, in order: the metric is primed at 0 for each."""
PROCESSOR_SIGNAL: Final = "compaction.processor.signal"
PROCESSOR_TRANSPORT: Final = "compaction.processor.transport"
PROCESSOR_REASON: Final = "compaction.processor.reason"
PROCESSOR_SNAPSHOT_REASON: Final = "compaction.processor.snapshot.reason"


class ProcessorSignal(StrEnum):
    """Values of ``compaction.processor.signal``: the OTLP signal of the items counted."""

    TRACES = "traces"
    METRICS = "metrics"
    LOGS = "logs"


class ProcessorTransport(StrEnum):
    """Values of ``compaction.processor.transport``: the receiver that accepted the items."""

    GRPC = "grpc"
    HTTP = "http"


class ProcessorReason(StrEnum):
    """Values of ``compaction.processor.reason`` (rejected and dropped items)."""

    MALFORMED = "malformed"  # 400: the payload could not be decoded
    TOO_LARGE = "too_large"  # 413: over receivers.max_request_bytes
    UNSUPPORTED = "unsupported"  # 415: content type or encoding
    UNAUTHENTICATED = "unauthenticated"  # 401: missing or wrong bearer token
    OVERLOADED = "overloaded"  # 429 / RESOURCE_EXHAUSTED: window or queue full
    DUPLICATE = "duplicate"  # a span or compaction already applied (retried batch)
    LATE = "late"  # arrived after its conversation had moved past its turn
    QUEUE_FULL = "queue_full"  # a finding could not be queued for forwarding
    DOWNSTREAM_REJECTED = "downstream_rejected"  # the next hop refused it for good
    ANALYSIS_ERROR = "analysis_error"  # the processor failed on it (logged); passed on as is
    REQUEST_TIMEOUT = "request_timeout"  # 408: not received within the request deadline
    PEER_CONNECTIONS = "peer_connections"  # 503: the peer holds max_connections_per_peer
    CONNECTIONS = "connections"  # 503: the receiver holds max_connections
    QUEUE_UNWRITABLE = "queue_unwritable"  # 503 / UNAVAILABLE: the queue's disk refused a write


class SnapshotReason(StrEnum):
    """Values of ``compaction.processor.snapshot.reason`` (why a state snapshot was not used)."""

    TOO_LARGE = "too_large"  # over state.max_bytes: not read
    TRUNCATED = "truncated"  # ends before its last line (a crash mid-write of a copy, a full disk)
    CORRUPT = "corrupt"  # not JSON, checksum mismatch, or a value this engine cannot rebuild
    FOREIGN_VERSION = "foreign_version"  # another format version or engine state layout
    SETTINGS_CHANGED = "settings_changed"  # written under other detector settings
    UNREADABLE = "unreadable"  # no regular file (a FIFO, a device, a directory) or no permission


ALL_METRICS: Final = (
    METRIC_TOKEN_USAGE,
    METRIC_OPERATION_DURATION,
    METRIC_COMPACTIONS,
    METRIC_FAILED_COMPACTIONS,
    METRIC_FINDINGS,
    METRIC_PHASE_TRANSITIONS,
    METRIC_TOKEN_FRACTION,
    METRIC_COMPACTION_TOKEN_FRACTION,
    METRIC_INTERVAL,
    METRIC_RECLAIMED,
    METRIC_REDISCOVERY,
    METRIC_RESIDUAL,
    METRIC_GENERATION,
    METRIC_LIVELOCKED,
    METRIC_ACTIVE,
    METRIC_INSTRUMENTATION_ERRORS,
    METRIC_PROCESSOR_RECEIVED,
    METRIC_PROCESSOR_REJECTED,
    METRIC_PROCESSOR_DROPPED,
    METRIC_PROCESSOR_FORWARDED,
    METRIC_PROCESSOR_SHED,
    METRIC_PROCESSOR_QUEUE,
    METRIC_PROCESSOR_SNAPSHOT_DISCARDED,
    METRIC_PROCESSOR_SNAPSHOT_WRITE_ERRORS,
    METRIC_PROCESSOR_UNREAD_SPANS,
)


def all_attribute_names() -> frozenset[str]:
    """Every attribute key, span name and event name defined in this module."""
    names = {
        value
        for key, value in globals().items()
        if key.isupper() and isinstance(value, str) and ("." in value or value == SPAN_COMPACTION)
    }
    names.difference_update((ENV_CAPTURE_MESSAGE_CONTENT, SCHEMA_URL, SEMCONV_VERSION))
    for spec in ALL_METRICS:
        names.update(spec.attributes)
    return frozenset(names)


# ---------------------------------------------------------------------------
# Other instrumentations' dialects, as the processor reads them
# (docs/processor.md, "Other instrumentations"; otel_compaction/otlp/dialects.py).

GEN_AI_USAGE_TOTAL_TOKENS: Final = "gen_ai.usage.total_tokens"
GEN_AI_PROMPT_PREFIX: Final = "gen_ai.prompt."
GEN_AI_COMPLETION_CONTENT: Final = "gen_ai.completion.0.content"
LLM_FUNCTIONS_PREFIX: Final = "llm.request.functions.0.name"
TRACELOOP_ASSOCIATION_PREFIX: Final = "traceloop.association.properties."
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_PROMPT_TOKENS: Final = "llm.token_count.prompt"
OPENINFERENCE_COMPLETION_TOKENS: Final = "llm.token_count.completion"
OPENINFERENCE_CACHE_READ_TOKENS: Final = "llm.token_count.prompt_details.cache_read"
OPENINFERENCE_MODEL_NAME: Final = "llm.model_name"
OPENINFERENCE_FINISH_REASON: Final = "llm.finish_reason"
OPENINFERENCE_INPUT_MESSAGES: Final = "llm.input_messages."
OPENINFERENCE_OUTPUT_CONTENT: Final = "llm.output_messages.0.message.content"
OPENINFERENCE_TOOL_PREFIX: Final = "llm.tools."
LITELLM_CALL_ID: Final = "litellm.call_id"
LITELLM_REQUEST_SPAN: Final = "litellm_request"
LITELLM_RAW_REQUEST_SPAN: Final = "raw_gen_ai_request"
ANTHROPIC_REQUEST_ID: Final = "anthropic.request.id"
ANTHROPIC_STOP_REASON: Final = "anthropic.message.stop_reason"

DIALECT_READ_NAMES: Final = frozenset(
    {
        GEN_AI_USAGE_PROMPT_TOKENS,
        GEN_AI_USAGE_COMPLETION_TOKENS,
        GEN_AI_USAGE_TOTAL_TOKENS,
        GEN_AI_TOOL_DEFINITIONS,
        GEN_AI_PROMPT_PREFIX,
        GEN_AI_COMPLETION_CONTENT,
    }
)
"""``gen_ai.*`` names other instrumentations write that are not (or no longer) official:
read by the processor, never emitted."""
PROCESSOR_DIALECT: Final = "compaction.processor.dialect"
"""Attribute of ``compaction.processor.unread_spans``: the instrumentation's dialect."""


class Dialect(StrEnum):
    """Whose telemetry an inference span is (``compaction.processor.dialect``)."""

    GENAI = "genai"
    OPENLLMETRY = "openllmetry"
    OPENINFERENCE = "openinference"
    LITELLM = "litellm"
    ANTHROPIC_SDK = "anthropic_sdk"


class KeySource(StrEnum):
    """Which key grouped another instrumentation's calls into a conversation."""

    CONVERSATION_ID = GEN_AI_CONVERSATION_ID
    SESSION_ID = SESSION_ID  # the module's official key, by the same name
    ASSOCIATION = "traceloop.association.properties"
    TRACE_PARENT = "trace_and_parent_span"
    TRACE = "trace"
    LOOSE = "service_model_gap"


class Evidence(StrEnum):
    """What an inferred compaction rests on (its ``compaction.trigger``, named in its
    findings): a subset of :class:`CompactionTrigger`, values taken from it."""

    SUMMARIZER_CALL = CompactionTrigger.SUMMARIZER_CALL.value
    TOKEN_FALL = CompactionTrigger.TOKEN_FALL.value
    UNCARRIED_REPLY = CompactionTrigger.UNCARRIED_REPLY.value
    COMPACTED_FLAG = CompactionTrigger.CONVERSATION_COMPACTED.value


VALUE_SETS: Final[Mapping[str, type[Enum]]] = MappingProxyType(
    {
        COMPACTION_SOURCE: CompactionSource,
        COMPACTION_MODE: CompactionMode,
        COMPACTION_TRIGGER: CompactionTrigger,
        COMPACTION_CALL_USAGE: CallUsage,
        CONVERSATION_ID_SOURCE: ConversationIdSource,
        PHASE_SOURCE: PhaseSource,
        FINDING_KIND: FindingKind,
        ADVICE_ACTION: AdviceAction,
        SUMMARY_TEMPLATE: SummaryTemplateName,
        ERROR_STAGE: ErrorStage,
        PROCESSOR_SIGNAL: ProcessorSignal,
        PROCESSOR_TRANSPORT: ProcessorTransport,
        PROCESSOR_REASON: ProcessorReason,
        PROCESSOR_SNAPSHOT_REASON: SnapshotReason,
        PROCESSOR_DIALECT: Dialect,
        GEN_AI_OPERATION_NAME: GenAiOperationNameValues,
        GEN_AI_PROVIDER_NAME: GenAiProviderNameValues,
        GEN_AI_TOKEN_TYPE: GenAiTokenTypeValues,
    }
)
"""The value set of each attribute (and metric label) that has one: what it may carry
(``compaction.trigger`` also carries an agent's own word, passed through as given)."""
