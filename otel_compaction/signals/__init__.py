"""Signals: pressure (how full the context is) and phase (what the agent is doing).

Pure computations and two small per-conversation trackers, free of the OTel
SDK, the LLM SDKs and wrapt. Definitions and formulas: ``docs/signals.md``.

Usage::

    pressure = PressureTracker(settings).observe(context_tokens, context_window(model, settings),
                                                 tool_output_tokens)
    phase = PhaseTracker(settings).observe_turn(("read_file", "grep"))
"""

from otel_compaction.signals.phase import (
    DEFAULT_REPORTED_CONFIDENCE,
    PhaseTracker,
    reported_distribution,
)
from otel_compaction.signals.phase_model import (
    emission_matrix,
    filter_step,
    normalized_entropy,
    transition_likelihood,
    transition_matrix,
)
from otel_compaction.signals.pressure import PressureTracker, attention_decay, token_fraction
from otel_compaction.signals.tokens import estimate_tokens
from otel_compaction.signals.tools import (
    DEFAULT_TOOL_CATEGORIES,
    EDITOR_TOOLS,
    SHELL_TOOLS,
    ToolCategorizer,
    ToolCategory,
    categorize_command,
    categorize_tool,
    parse_category,
)
from otel_compaction.signals.windows import MODEL_WINDOWS, context_window, normalize_model

__all__ = [
    "DEFAULT_REPORTED_CONFIDENCE",
    "DEFAULT_TOOL_CATEGORIES",
    "EDITOR_TOOLS",
    "MODEL_WINDOWS",
    "SHELL_TOOLS",
    "PhaseTracker",
    "PressureTracker",
    "ToolCategorizer",
    "ToolCategory",
    "attention_decay",
    "categorize_command",
    "categorize_tool",
    "context_window",
    "emission_matrix",
    "estimate_tokens",
    "filter_step",
    "normalize_model",
    "normalized_entropy",
    "parse_category",
    "reported_distribution",
    "token_fraction",
    "transition_likelihood",
    "transition_matrix",
]
