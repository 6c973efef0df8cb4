"""The compaction processor: an OTLP service behind the OpenTelemetry Collector.

The fleet half of the product: the same engine as in process
(``otel_compaction.engine``), fed from the span stream of many agents. Reading
and writing OTLP (decode, extract, ``ConversationState``) is the library
``otel_compaction.otlp``, shared with ``analyze``; this package is the service
around it::

    OTLP/gRPC, OTLP/HTTP ─▶ otlp.decode ─▶ otlp.extract (spans → turns, compactions)
      ─▶ pipeline: admission, otlp.state (reorder window, dedupe, ConversationRegistry)
      ─▶ tap (finding spans) | enrich (flags on the spans) ─▶ queue ─▶ forward (OTLP)

Run it with ``otel-compaction processor --config FILE``; see ``README.md``
beside this file and ``docs/processor.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

# Imported on first use: the service needs the [processor] extra (grpcio, PyYAML,
# prometheus-client); ``analyze`` and ``import`` use ``otel_compaction.otlp`` only.
_EXPORTS = {
    "ConfigError": "otel_compaction.processor.config",
    "ProcessorConfig": "otel_compaction.processor.config",
    "load_config": "otel_compaction.processor.config",
    "Overloaded": "otel_compaction.processor.pipeline",
    "Pipeline": "otel_compaction.processor.pipeline",
    "ProcessorService": "otel_compaction.processor.service",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
