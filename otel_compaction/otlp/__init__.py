"""OTLP in and out of the engine: payloads decoded, spans and events made engine inputs.

The library the processor service, ``otel-compaction analyze``, the HTML report
and the demo share, so a verdict never depends on which of them read the
telemetry. It needs only the core dependencies (protobuf, ``opentelemetry-proto``),
never the ``[processor]`` extra, and imports nothing from ``processor/``::

    bytes ─▶ decode (protobuf, OTLP/JSON, gzip) ─▶ Export*ServiceRequest
      ─▶ spanview, values (span attributes read from their bytes)
      ─▶ extract (spans), agent_events (Claude Code, Codex log events) ─▶ Items
      ─▶ state (ConversationState: ordering, de-duplication, the shared engine)
    attributes: Python values ─▶ OTLP ``KeyValue`` (what enrich and tap write)
"""
