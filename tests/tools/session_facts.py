"""Structural facts of kept sessions and captures, for a data folder's ``FACTS.json``.

Usage::

    python -m tests.tools.session_facts tests/data/real-sessions > FACTS.json

Counted from the file alone (line numbers are 0-based lines of the ``.jsonl``); no
verdicts. The fields are described in the folder's README.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from tests.tools.skeletonize import detect

Json = Any
ABOUT = (
    "Structural facts of each file, counted from the file itself (line numbers are "
    "0-based lines of the .jsonl). No verdicts: what each session should be judged is "
    "for the rules to decide."
)


def _context(usage: dict[str, Json]) -> int:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def _seconds(a: str, b: str) -> float:
    parse = datetime.fromisoformat
    return round(
        (parse(b.replace("Z", "+00:00")) - parse(a.replace("Z", "+00:00"))).total_seconds(), 1
    )


def claude_facts(records: list[dict[str, Json]]) -> dict[str, Json]:
    """Compactions, calls between them and tool calls of a Claude Code transcript."""
    boundaries = [i for i, r in enumerate(records) if r.get("subtype") in ("compact_boundary",)]
    micro = [i for i, r in enumerate(records) if r.get("subtype") == "microcompact_boundary"]
    calls: list[tuple[int, str, int]] = []  # (line, message id, context tokens)
    seen: set[str] = set()
    tools: Counter[str] = Counter()
    for i, r in enumerate(records):
        message = r.get("message")
        if r.get("type") != "assistant" or not isinstance(message, dict):
            continue
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tools[str(block.get("name"))] += 1
        mid = str(message.get("id"))
        if message.get("model") != "<synthetic>" and mid not in seen and message.get("usage"):
            seen.add(mid)
            calls.append((i, mid, _context(message["usage"])))
    meta = [records[i].get("compactMetadata") or {} for i in boundaries]
    return {
        "lines": len(records),
        "kind": "claude-code",
        "compactions": len(boundaries),
        "compaction_lines": boundaries,
        "triggers": [m.get("trigger") for m in meta],
        "pre_tokens": [m.get("preTokens") for m in meta],
        "post_tokens": [m.get("postTokens") for m in meta],
        "next_request_context_tokens": [
            next((c for line, _, c in calls if line > b), None) for b in boundaries
        ],
        "api_responses_between_compactions": [
            sum(1 for line, _, _ in calls if a < line < b) for a, b in pairwise(boundaries)
        ],
        "seconds_between_compactions": [
            _seconds(records[a]["timestamp"], records[b]["timestamp"])
            for a, b in pairwise(boundaries)
        ],
        "api_responses_before_first_compaction": sum(
            1 for line, _, _ in calls if not boundaries or line < boundaries[0]
        ),
        "api_responses_total": len(calls),
        "compact_summary_follows_each_boundary": all(
            any(r.get("isCompactSummary") for r in records[b + 1 : b + 4]) for b in boundaries
        ),
        "compactMetadata_keys": sorted({k for m in meta for k in m}),
        "microcompactions": len(micro),
        "microcompaction_lines": micro,
        "is_subagent": any(r.get("isSidechain") for r in records if r.get("type") == "user"),
        "first_request_context_tokens": calls[0][2] if calls else None,
        "max_request_context_tokens": max((c for _, _, c in calls), default=None),
        "tool_calls_total": sum(tools.values()),
        "tool_calls_by_name": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def codex_facts(records: list[dict[str, Json]]) -> dict[str, Json]:
    """Compactions, token counts and tool calls of a Codex CLI rollout."""
    compacted: list[int] = []
    events: list[int] = []
    before: list[int | None] = []
    after: list[int | None] = []
    tools: Counter[str] = Counter()
    last: int | None = None
    history: list[int] = []
    meta: dict[str, Json] = {}
    window = None
    for i, r in enumerate(records):
        raw = r.get("payload")
        payload: dict[str, Json] = raw if isinstance(raw, dict) else {}
        kind = (r.get("type"), payload.get("type"))
        if kind[0] == "session_meta":
            meta = payload
        elif kind[0] == "compacted":
            compacted.append(i)
            before.append(last)
            history.append(len(payload.get("replacement_history") or []))
        elif kind == ("event_msg", "context_compacted"):
            events.append(i)
        elif kind == ("event_msg", "token_count") and payload.get("info"):
            last = int(payload["info"]["last_token_usage"]["input_tokens"])
            window = payload["info"].get("model_context_window", window)
            if len(after) < len(compacted) and last > 0:
                after.append(last)
        elif kind[0] == "response_item" and kind[1] in _CODEX_CALLS:
            tools[str(payload.get("name") or kind[1])] += 1
    return {
        "lines": len(records),
        "kind": "codex",
        "compactions": len(compacted),
        "compaction_lines": compacted,
        "context_compacted_event_lines": events,
        "pre_tokens": before,
        "next_request_context_tokens": after + [None] * (len(compacted) - len(after)),
        "replacement_history_items": history,
        "compacted_message_chars": [
            len(str((records[i].get("payload") or {}).get("message") or "")) for i in compacted
        ],
        "model_context_window": window,
        "cli_version": meta.get("cli_version"),
        "originator": meta.get("originator"),
        "tool_calls_total": sum(tools.values()),
        "tool_calls_by_name": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


_CODEX_CALLS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))


def _attrs(record: dict[str, Json]) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for a in record.get("attributes", []):
        value = a.get("value") or {}
        out[a["key"]] = next(iter(value.values()), None) if value else None
    return out


def otlp_facts(requests: list[dict[str, Json]]) -> dict[str, Json]:
    """Events by name, compaction and request attributes of an OTLP/JSON log export."""
    names: Counter[str] = Counter()
    compactions: list[dict[str, Json]] = []
    requests_out: list[dict[str, Json]] = []
    records = 0
    for request in requests:
        for rl in request.get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                for record in sl.get("logRecords", []):
                    records += 1
                    attrs = _attrs(record)
                    name = str(attrs.get("event.name") or "(no event.name)")
                    names[name] += 1
                    if name in ("claude_code.compaction", "compaction"):
                        compactions.append(_pick(attrs, _COMPACTION_KEYS))
                    if name in ("claude_code.api_request", "api_request"):
                        requests_out.append(_pick(attrs, _REQUEST_KEYS))
    return {
        "lines": len(requests),
        "kind": "otlp-logs",
        "log_records": records,
        "events_by_name": dict(sorted(names.items())),
        "compaction_events": compactions,
        "api_request_events": requests_out,
    }


_COMPACTION_KEYS = ("trigger", "success", "error", "pre_tokens", "post_tokens", "duration_ms")
_REQUEST_KEYS = (
    "query_source",
    "input_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "output_tokens",
)


def _pick(attrs: dict[str, Json], keys: tuple[str, ...]) -> dict[str, Json]:
    return {k: attrs[k] for k in keys if k in attrs}


FACTS = {"claude-code": claude_facts, "codex": codex_facts, "otlp-logs": otlp_facts}


def file_facts(path: Path) -> dict[str, Json]:
    """The facts of one ``.jsonl`` file, by its detected format."""
    records = [json.loads(line) for line in path.read_text("utf-8").split("\n") if line.strip()]
    return FACTS[detect(records[0])](records) if records else {"lines": 0}


def main(argv: list[str] | None = None) -> int:
    """Print the ``FACTS.json`` of a folder: every ``*.jsonl`` in it, sorted by name."""
    folder = Path((argv if argv is not None else sys.argv[1:])[0])
    files = {p.name: file_facts(p) for p in sorted(folder.glob("*.jsonl"))}
    print(json.dumps({"about": ABOUT, "files": files}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
