"""Helpers for the demo's tests: reading the OTLP/JSON files the demo writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from otel_compaction import semconv as sc


def spans(path: Path) -> Iterator[dict[str, Any]]:
    """Every span of an OTLP/JSON traces file, as a dict with plain ``attrs``."""
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    span["attrs"] = {
                        a["key"]: next(iter(a["value"].values()), None)
                        for a in span.get("attributes", ())
                    }
                    yield span


def agent_conversations(path: Path) -> dict[str, set[str]]:
    """Agent name -> the conversation ids of the spans in its ``invoke_agent`` span's trace."""
    all_spans = list(spans(path))
    agents = {
        s["traceId"]: s["attrs"][sc.GEN_AI_AGENT_NAME]
        for s in all_spans
        if s["attrs"].get(sc.GEN_AI_OPERATION_NAME) == sc.OPERATION_INVOKE_AGENT
    }
    found: dict[str, set[str]] = {agent: set() for agent in agents.values()}
    for span in all_spans:
        cid = span["attrs"].get(sc.CONVERSATION_ID)
        if cid is not None and span["traceId"] in agents:
            found[agents[span["traceId"]]].add(cid)
    return found


def compaction_spans(path: Path, conversation_id: str) -> list[dict[str, Any]]:
    """The attributes of the conversation's compaction spans, in turn order."""
    found = [
        s["attrs"]
        for s in spans(path)
        if s["name"] == sc.SPAN_COMPACTION and s["attrs"].get(sc.CONVERSATION_ID) == conversation_id
    ]
    return sorted(found, key=lambda a: int(a[sc.TURN_INDEX]))
