"""Settings: every threshold and knob, with its default, in one frozen model.

Built from ``OTEL_PYTHON_COMPACTION_*`` environment variables and constructor
arguments. In the host process a bad environment value never breaks the agent:
it logs a warning naming the variable and falls back to the default. Arguments
passed in code are validated strictly (a typo there is a programming error).

``docs/configuration.md`` lists every field; a test keeps the two in sync.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from otel_compaction import semconv

logger = logging.getLogger(__name__)

ENV_PREFIX = "OTEL_PYTHON_COMPACTION_"

# Values of OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT that allow content on spans.
_CAPTURE_ON_SPAN = frozenset({"SPAN_ONLY", "SPAN_AND_EVENT", "TRUE"})


MAX_ATTENTION_WINDOW = 128
"""The most tool outputs ``attention_window`` may weigh; a turn reports no more sizes than this
(``compaction.turn.tool_output_tokens``)."""


class Settings(BaseModel):
    """All thresholds of the signals, lineage and detectors, with their defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Boundary compaction (docs/concepts.md#boundary-compaction).
    pressure_threshold: float = Field(0.65, ge=0.0, le=1.0)
    transition_veto: float = Field(0.35, ge=0.0, le=1.0)
    hard_ceiling: float = Field(0.92, ge=0.0, le=1.0)
    extractive_tail_turns: int = Field(8, ge=0)
    boundary_scope: Literal["summarizing", "client_lossy"] = Field(
        "summarizing",
        description="which compactions the boundary rule judges: every summarizing one, "
        "or only the client's own lossy ones (the original narrow scope)",
    )

    # Pressure signals.
    attention_window: int = Field(
        8,
        ge=1,
        le=MAX_ATTENTION_WINDOW,
        description="K: how many recent tool outputs count (at most 128)",
    )
    attention_decay: float = Field(0.8, gt=0.0, le=1.0, description="weight ratio per step back")
    default_window: int = Field(200_000, gt=0)
    model_windows: dict[str, int] = Field(default_factory=dict)

    # Phase signals.
    phases: tuple[str, ...] = semconv.DEFAULT_PHASES
    phase_stickiness: float = Field(0.85, gt=0.0, lt=1.0)
    phase_min_evidence_turns: int = Field(
        3, ge=0, description="turns with tool calls before an inferred phase is known"
    )
    phase_hold_confidence: float = Field(
        0.9, gt=0.0, le=1.0, description="confidence at which an inferred phase counts as held"
    )
    phase_hold_reported_confidence: float = Field(
        0.8, gt=0.0, le=1.0, description="confidence at which a reported phase counts as held"
    )
    phase_hold_turns: int = Field(
        3, ge=0, description="turns a held phase stays the reference after it was last held"
    )
    tool_categories: dict[str, str] = Field(default_factory=dict)

    # Re-expansion livelock (docs/concepts.md#re-expansion-livelock) and the vendors' guards.
    livelock_min_intervals: int = Field(4, ge=2)
    livelock_shrink_threshold: float = Field(0.20, ge=0.0, lt=1.0)
    livelock_content_stability: float = Field(0.15, ge=0.0)
    thrashing_turns: int = Field(3, ge=1)
    thrashing_count: int = Field(3, ge=1)
    no_progress_count: int = Field(2, ge=1)

    # Lineage: how much of an earlier summary a summary must repeat to continue it.
    lineage_carry_over: float = Field(0.5, gt=0.0, le=1.0)

    # Ineffective compaction: what a compaction must reclaim, in turns of the context's
    # growth, and as a share of the context when the growth is unknown.
    ineffective_min_turns: float = Field(2.0, ge=0.0)
    ineffective_min_reclaimed: float = Field(0.05, ge=0.0, le=1.0)

    # Rubric and preserve-schema (docs/concepts.md#the-preserve-schema).
    short_run_turns: int = Field(20, ge=0)
    schema_fields: tuple[str, ...] = ("goal", "plan", "decisions", "open_errors", "next_action")
    schema_min_coverage: float = Field(0.6, ge=0.0, le=1.0)
    schema_template: str = Field(
        "auto",
        description="what a summary's coverage is judged against: auto (the known "
        "summarizer template it follows; none known: not judged; only templates checked "
        "on real summaries flag), pinned (the summarizer "
        "was given schema_fields: judge every summary on them), a known template's name "
        "(claude_code, langchain, pydantic_ai, openhands, strands), or off",
    )

    # Rediscovery (docs/concepts.md#rediscovery): the agent calls after a compaction in
    # which repeated tool calls count as work the compaction made it do again.
    rediscovery_horizon: int = Field(20, ge=1)

    # State bounds.
    max_conversations: int = Field(10_000, ge=1)
    conversation_idle_seconds: float = Field(3600.0, gt=0.0)
    max_compactions_per_conversation: int = Field(64, ge=4)
    history_max_chars: int = Field(
        16_000_000,
        ge=0,
        description="characters of request history the instrumentation keeps over all "
        "conversations (the caller's message objects; the current one is always kept)",
    )

    # Content capture (off unless the GenAI env var opts in).
    capture_content: bool = False
    content_max_chars: int = Field(4096, ge=0)

    # Instrumentation: the anthropic SDK's own per-call span (anthropic >= 1.14) is
    # "suppress"ed for calls we instrument (ours is the one inference span), or
    # "keep" as a child of ours.
    anthropic_sdk_span: Literal["suppress", "keep"] = "suppress"

    @field_validator("phases", "schema_fields")
    @classmethod
    def _non_empty_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError("must be a non-empty list of distinct names")
        return value

    @field_validator("schema_template")
    @classmethod
    def _known_template(cls, value: str) -> str:
        names = (*semconv.SCHEMA_TEMPLATE_MODES, *semconv.SummaryTemplateName)
        choices = [str(n) for n in names if n != semconv.SummaryTemplateName.UNKNOWN]
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """Settings from the environment, then ``overrides`` on top.

        A bad environment value is logged as a warning and replaced by the default;
        a bad override raises ``pydantic.ValidationError``.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is None or raw.strip() == "":
                continue
            try:
                parsed = _parse_env(name, raw)
                cls.model_validate({name: parsed})
            except (ValueError, ValidationError) as exc:
                logger.warning(
                    "ignoring %s%s=%r: %s; using the default",
                    ENV_PREFIX,
                    name.upper(),
                    raw,
                    _first_error(exc),
                )
                continue
            values[name] = parsed
        capture = env.get(semconv.ENV_CAPTURE_MESSAGE_CONTENT, "")
        if capture.strip().upper() in _CAPTURE_ON_SPAN:
            values["capture_content"] = True
        values.update(overrides)
        return cls.model_validate(values)

    def window_for(self, model: str | None) -> int | None:
        """The user's override window for ``model``, if one is configured."""
        if model is None:
            return None
        return self.model_windows.get(model)


def _parse_env(name: str, raw: str) -> Any:
    """Turn one environment string into the value pydantic validates."""
    raw = raw.strip()
    if name in ("model_windows",):
        return {k: int(v) for k, v in _pairs(raw)}
    if name in ("tool_categories",):
        return dict(_pairs(raw))
    if name in ("phases", "schema_fields"):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if name == "capture_content":
        return raw.upper() in ("1", "TRUE", "YES", "ON")
    return raw


def _pairs(raw: str) -> list[tuple[str, str]]:
    pairs = []
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"expected comma-separated name=value pairs, got {item.strip()!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return str(err.get("msg", exc))
    return str(exc)
