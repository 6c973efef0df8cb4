"""Record by record: Claude Code transcripts, Codex CLI rollouts, OTLP/JSON log exports.

Each function maps one parsed line to its skeleton and keeps everything the engine reads
(record types, ids, timestamps, usage, model and tool names, compaction metadata).
"""

from __future__ import annotations

import json

from tests.tools.skeleton_text import filler, is_identifier, short_hash, summary_filler, words
from tests.tools.skeleton_values import (
    Json,
    arguments_text,
    object_key,
    tool_input,
    walk,
)

IDENTITY_ATTRIBUTES = words("user.email user.account_uuid user.account_id organization.id user.id")
"""OTel attributes that name a person or an account: dropped."""

_ARGUMENT_ATTRIBUTES = frozenset(("tool_parameters", "tool_input", "arguments"))
_PROSE_ATTRIBUTES = frozenset(("prompt", "response", "output", "error"))


def claude_record(record: dict[str, Json]) -> dict[str, Json]:
    """One transcript record."""
    out: dict[str, Json] = {}
    for key, value in record.items():
        if key == "message" and isinstance(value, dict):
            out[key] = _claude_message(value, bool(record.get("isCompactSummary")))
        elif key == "toolUseResult":
            out[key] = _hash_strings(value)
        elif key == "compactMetadata":
            out[key] = value
        else:
            out[object_key(key)] = walk(value, key)
    return out


def _claude_message(message: dict[str, Json], is_summary: bool) -> dict[str, Json]:
    out = {k: walk(v, k) for k, v in message.items() if k != "content"}
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = summary_filler(content) if is_summary else filler(content)
    elif isinstance(content, list):
        out["content"] = [_claude_block(b, is_summary) for b in content]
    elif "content" in message:
        out["content"] = content
    return out


def _claude_block(block: Json, is_summary: bool) -> Json:
    if not isinstance(block, dict):
        return walk(block)
    if block.get("type") == "tool_use":
        name = str(block.get("name", ""))
        rest = {k: walk(v, k) for k, v in block.items() if k != "input"}
        return {**rest, "input": tool_input(name, block.get("input"))}
    if block.get("type") == "text" and is_summary and isinstance(block.get("text"), str):
        return {**walk(block), "text": summary_filler(block["text"])}
    return walk(block)


def _hash_strings(value: Json) -> Json:
    """Every string a short hash: for copies of content kept elsewhere as filler."""
    if isinstance(value, str):
        return value if value in ("", "text", "image") else short_hash(value)
    if isinstance(value, list):
        return [_hash_strings(v) for v in value]
    if isinstance(value, dict):
        return {object_key(k): v if k == "type" else _hash_strings(v) for k, v in value.items()}
    return value


def codex_record(record: dict[str, Json]) -> dict[str, Json]:
    """One rollout line: ``session_meta``, ``turn_context``, ``response_item``,
    ``event_msg`` or ``compacted``."""
    payload = record.get("payload")
    kind = record.get("type")
    if kind == "response_item" and isinstance(payload, dict):
        new_payload: Json = response_item(payload)
    elif kind == "compacted" and isinstance(payload, dict):
        new_payload = _compacted(payload)
    else:
        new_payload = walk(payload, "payload")
    return {**{k: walk(v, k) for k, v in record.items() if k != "payload"}, "payload": new_payload}


def response_item(item: dict[str, Json]) -> dict[str, Json]:
    """One model-visible item (message, reasoning, tool call or output)."""
    kind = item.get("type")
    name = str(item.get("name", ""))
    out = {k: walk(v, k) for k, v in item.items()}
    if kind == "function_call" and isinstance(item.get("arguments"), str):
        out["arguments"] = arguments_text(name, item["arguments"])
    elif kind == "local_shell_call" and isinstance(item.get("action"), dict):
        out["action"] = tool_input("local_shell", item["action"])
    elif kind in ("custom_tool_call",) and isinstance(item.get("input"), str):
        out["input"] = filler(item["input"])
    elif kind in ("function_call_output", "custom_tool_call_output"):
        out["output"] = _tool_output(item.get("output"))
    return out


def _tool_output(output: Json) -> Json:
    """A tool's output: JSON text stays JSON (its strings filler), anything else filler."""
    if not isinstance(output, str):
        return walk(output, "output")
    try:
        parsed = json.loads(output)
    except ValueError:
        return filler(output)
    if isinstance(parsed, dict | list):
        return json.dumps(walk(parsed, "output"), ensure_ascii=False)
    return filler(output)


def _compacted(payload: dict[str, Json]) -> dict[str, Json]:
    out = {k: walk(v, k) for k, v in payload.items()}
    history = payload.get("replacement_history")
    if isinstance(history, list):
        out["replacement_history"] = [
            response_item(i) if isinstance(i, dict) else walk(i) for i in history
        ]
    return out


def otlp_logs_request(request: dict[str, Json]) -> dict[str, Json]:
    """One ``ExportLogsServiceRequest``: identity attributes dropped, content made filler,
    tool arguments skeletonized; names, numbers, times and ids kept."""
    resources = []
    for resource_logs in request.get("resourceLogs", []):
        resource = dict(resource_logs.get("resource", {}))
        resource["attributes"] = _attributes(resource.get("attributes", []), "")
        scopes = []
        for scope_logs in resource_logs.get("scopeLogs", []):
            records = [_log_record(r) for r in scope_logs.get("logRecords", [])]
            scopes.append({**scope_logs, "logRecords": records})
        resources.append({**resource_logs, "resource": resource, "scopeLogs": scopes})
    return {**request, "resourceLogs": resources}


def _log_record(record: dict[str, Json]) -> dict[str, Json]:
    attributes = record.get("attributes", [])
    tool = next((str(_any(a)) for a in attributes if a.get("key") == "tool_name"), "")
    out = {**record, "attributes": _attributes(attributes, tool)}
    body = record.get("body")
    if isinstance(body, dict) and isinstance(body.get("stringValue"), str):
        text = body["stringValue"]
        out["body"] = {"stringValue": text if is_identifier(text) else filler(text)}
    return out


def _any(attribute: dict[str, Json]) -> Json:
    value = attribute.get("value") or {}
    return next(iter(value.values()), None) if isinstance(value, dict) else None


def _attributes(attributes: list[dict[str, Json]], tool: str) -> list[dict[str, Json]]:
    out = []
    for attribute in attributes:
        key = str(attribute.get("key"))
        if key in IDENTITY_ATTRIBUTES:
            continue
        value = attribute.get("value")
        if isinstance(value, dict) and isinstance(value.get("stringValue"), str):
            value = {"stringValue": _attribute_string(key, value["stringValue"], tool)}
        out.append({**attribute, "value": value})
    return out


def _attribute_string(key: str, text: str, tool: str) -> str:
    if key in _ARGUMENT_ATTRIBUTES:
        return arguments_text(tool, text)
    if key == "host.name":
        return text if text.startswith("<") else short_hash(text)
    if key in _PROSE_ATTRIBUTES:
        return text if text.startswith(("<REDACTED", "[REDACTED")) else _prose(text)
    return str(walk(text, key))


def _prose(text: str) -> str:
    return text if is_identifier(text) else filler(text)


__all__ = ["claude_record", "codex_record", "otlp_logs_request", "summary_filler"]
