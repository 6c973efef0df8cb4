"""The configurations the instrumentation-overhead benchmark compares, and what each one is.

``sdk_span`` says whether the anthropic client's own span (anthropic >= 1.14 emits one CLIENT
span per call when a tracer provider is reachable) stays on. It is on where the configuration is
that span ("sdk"), so no configuration pays for two spans silently: none of the competitors
reads, suppresses or enriches the SDK's span (their sources never mention the client's
``open_telemetry`` option or its ``com.anthropic.sdk.python`` scope), so they run with the
client option ``open_telemetry=False``, and so does ours in (e). Ours suppresses the client's
span for the calls it wraps (setting ``anthropic_sdk_span="suppress"``, the default), and (e')
measures that default-user case: the client's span left on, one span per call all the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROVIDERS = ("anthropic", "openai")


@dataclass(frozen=True, slots=True)
class Config:
    """One measured configuration: which instrumentor per provider, and the SDK span's state."""

    key: str
    label: str
    sdk_span: bool = False
    instrumentors: dict[str, str] = field(default_factory=dict)  # provider -> "module:Class"
    providers: tuple[str, ...] = PROVIDERS
    note: str = ""


CONFIGS: tuple[Config, ...] = (
    Config("plain", "uninstrumented", note="client option `open_telemetry=False`; the baseline"),
    Config(
        "sdk",
        "(a) anthropic SDK span",
        sdk_span=True,
        providers=("anthropic",),
        note="the client's own span, default options (metadata only); the floor",
    ),
    Config(
        "openllmetry",
        "(b) OpenLLMetry",
        instrumentors={
            "anthropic": "opentelemetry.instrumentation.anthropic:AnthropicInstrumentor",
            "openai": "opentelemetry.instrumentation.openai:OpenAIInstrumentor",
        },
        note="default config: prompts and completions captured as span attributes",
    ),
    Config(
        "official",
        "(c) OTel python-genai",
        instrumentors={
            "anthropic": "opentelemetry.instrumentation.genai.anthropic:AnthropicInstrumentor",
            "openai": "opentelemetry.instrumentation.genai.openai:OpenAIInstrumentor",
        },
        note="default config: no content (its capture variable is unset)",
    ),
    Config(
        "openinference",
        "(d) OpenInference",
        instrumentors={
            "anthropic": "openinference.instrumentation.anthropic:AnthropicInstrumentor",
            "openai": "openinference.instrumentation.openai:OpenAIInstrumentor",
        },
        note="default config: input and output messages captured as span attributes",
    ),
    Config(
        "ours",
        "(e) otel-compaction",
        instrumentors={
            "anthropic": "otel_compaction.instrument:CompactionInstrumentor",
            "openai": "otel_compaction.instrument:CompactionInstrumentor",
        },
        note="default settings: no content; conversation inference, pressure, phase, lineage",
    ),
    Config(
        "ours_sdk_on",
        "(e') otel-compaction, client span left on",
        sdk_span=True,
        providers=("anthropic",),
        instrumentors={"anthropic": "otel_compaction.instrument:CompactionInstrumentor"},
        note="what a default user gets: ours suppresses the client's span for calls it wraps",
    ),
    Config(
        "telemetry_floor",
        "(f) ours' telemetry alone",
        providers=("anthropic",),
        instrumentors={"anthropic": "benchmarks.overhead.floor:TelemetryFloorInstrumentor"},
        note="ours' span and four histogram records with no analysis (overhead/floor.py)",
    ),
)

BY_KEY = {c.key: c for c in CONFIGS}
BASELINE = "plain"
FLOOR = "sdk"
OURS = "ours"
COMPETITORS = ("openllmetry", "official", "openinference")
OWN_TIME_EXACT = (BASELINE, "openllmetry", "official", OURS, "telemetry_floor")
"""Configurations whose hooks all sit outside the SDK call, so call time minus time inside it
(``clock``) is exactly their own time; the SDK's span and OpenInference work inside."""
