"""(f) The telemetry ours emits per call, and nothing else: the floor of any implementation of it.

Wraps the anthropic ``Messages.create`` with the least code that emits what ours emits for a
continuing call of an agent: the same CLIENT span (``chat {model}``, 8 attributes at the start
and 22 after the response, the same keys and value types, the ``compaction.*`` ones constant),
made current around the SDK call, and the same four histogram records (operation duration,
input and output token usage, token fraction) on the same instruments, in the span's context
(their exemplars name it, as ours' and the official packages' do). No conversation, no
history, no turn analysis: what it costs is what the OpenTelemetry SDK charges for ours'
telemetry, so ``ours - floor`` is what ours' analysis and plumbing cost, and ``floor`` against
another instrumentation says how much room its telemetry leaves for any analysis at all.
Streams are wrapped in a generator that ends the span when the stream is exhausted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from opentelemetry import context, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, TracerProvider

from otel_compaction import semconv as sc
from otel_compaction.emit.metrics import create_instrument

_CONSTANT = {
    sc.TURN_INDEX: 3,
    sc.CONTEXT_WINDOW: 1_000_000,
    sc.PRESSURE_ATTENTION_DECAY: 0.0029,
    sc.PHASE_NAME: "explore",
    sc.PHASE_CONFIDENCE: 0.7264,
    sc.PHASE_ENTROPY: 0.5443,
    sc.PHASE_TRANSITION_LIKELIHOOD: 0.3762,
    sc.PHASE_SOURCE: "inferred",
    sc.TOOL_CATEGORIES: ["read"],
    sc.CONTEXT_NEW_CONTENT_TOKENS: 555,
    sc.TOOL_CALLS: ["grep"],
    sc.TOOL_CALL_KEYS: ["e3b0c44298fc1c14"],
    sc.TOOL_OUTPUT_TOKENS: [548],
}


class TelemetryFloorInstrumentor:
    """Patches ``anthropic.resources.messages.Messages.create`` (benchmark use only)."""

    def instrument(self, tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
        """Install the wrapper; there is no uninstrument (one process per configuration)."""
        from anthropic.resources.messages import Messages

        tracer = tracer_provider.get_tracer("telemetry-floor")
        meter = meter_provider.get_meter("telemetry-floor")
        duration = create_instrument(meter, sc.METRIC_OPERATION_DURATION)
        usage = create_instrument(meter, sc.METRIC_TOKEN_USAGE)
        fraction = create_instrument(meter, sc.METRIC_TOKEN_FRACTION)
        base = {
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_PROVIDER_NAME: "anthropic",
            sc.GEN_AI_REQUEST_MODEL: "",
        }
        metric_input = {**base, sc.GEN_AI_TOKEN_TYPE: sc.TOKEN_TYPE_INPUT}
        metric_output = {**base, sc.GEN_AI_TOKEN_TYPE: sc.TOKEN_TYPE_OUTPUT}
        metric_fraction = {sc.GEN_AI_PROVIDER_NAME: "anthropic"}
        original = Messages.create

        def finish(span: Any, started: float, message: Any) -> None:
            u = message.usage
            attributes: dict[str, Any] = {
                sc.CONVERSATION_ID: "conv-floor",
                **_CONSTANT,
                sc.CONTEXT_TOKENS: u.input_tokens,
                sc.PRESSURE_TOKEN_FRACTION: round(u.input_tokens / 1_000_000, 4),
                sc.GEN_AI_RESPONSE_ID: message.id,
                sc.GEN_AI_RESPONSE_MODEL: message.model,
                sc.GEN_AI_USAGE_INPUT_TOKENS: u.input_tokens,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: u.output_tokens,
                sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: u.cache_read_input_tokens or 0,
                sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: u.cache_creation_input_tokens or 0,
                sc.GEN_AI_RESPONSE_FINISH_REASONS: [message.stop_reason],
            }
            span.set_attributes(attributes)
            here = trace.set_span_in_context(span)  # the exemplars name the call's span
            duration.record(time.monotonic() - started, base, context=here)
            usage.record(u.input_tokens, metric_input, context=here)
            usage.record(u.output_tokens, metric_output, context=here)
            fraction.record(u.input_tokens / 1_000_000, metric_fraction, context=here)
            span.end()

        def streamed(stream: Any, span: Any, started: float) -> Iterator[Any]:
            message = None
            for event in stream:
                if event.type == "message_start":
                    message = event.message
                elif event.type == "message_delta" and message is not None:
                    message.usage.output_tokens = event.usage.output_tokens
                    message.stop_reason = event.delta.stop_reason
                yield event
            if message is not None:
                finish(span, started, message)

        def create(self: Any, *args: Any, **kwargs: Any) -> Any:
            model = kwargs.get("model", "")
            span = tracer.start_span(
                f"chat {model}",
                kind=SpanKind.CLIENT,
                attributes={
                    **base,
                    sc.SERVER_ADDRESS: "api.anthropic.com",
                    sc.SERVER_PORT: 443,
                    sc.GEN_AI_REQUEST_MODEL: model,
                    sc.GEN_AI_REQUEST_MAX_TOKENS: kwargs.get("max_tokens", 0),
                    sc.CONVERSATION_ID_SOURCE: "inferred",
                    sc.CONVERSATION_ID: "conv-floor",
                },
            )
            started = time.monotonic()
            token = context.attach(trace.set_span_in_context(span))
            try:
                result = original(self, *args, **kwargs)
            finally:
                context.detach(token)
            if kwargs.get("stream"):
                return streamed(result, span, started)
            finish(span, started, result)
            return result

        Messages.create = create  # type: ignore[method-assign]
