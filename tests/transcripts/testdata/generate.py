"""Writes the generated test transcripts of this folder (run it to regenerate them).

``claude_livelock.jsonl`` replays the livelock incident's run as a Claude Code session:
a 200k window, auto-compaction at 85% (170k tokens), 11 compactions whose
summaries each contain the previous summary, intervals of 9 turns shrinking to
7, 5, 3 and 2 at the end, and flat new task content (one ~100-token tool result
per turn). ``claude_reset.jsonl`` is its lineage-reset twin: summaries rebuilt
from raw turns (none contains the previous one) and a steady cadence.

    python tests/transcripts/testdata/generate.py
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRIGGER = 170_000
GROWTH = 12_000  # context growth per turn (tool result, assistant text, re-derived framing)
FIRST_GROWTH = 7_000  # per turn before the first compaction
FIRST_INTERVAL = 20
START = datetime(2026, 11, 13, 9, 0, tzinfo=UTC)
SCHEMA = (
    "## Goal\nMake tests/test_fixture.py::test_refresh pass.\n"
    "## Plan\nTrace the stale fixture, patch the cache key, re-run the suite.\n"
    "## Decisions\nKeep the public API; fix the fixture, not the assertion.\n"
    "## Open errors\nAssertionError in test_refresh (stale cache entry).\n"
    "## Next action\nRead src/cache.py around the key builder.\n"
)
FILES = ("cache.py", "fixtures.py", "conftest.py", "keys.py", "store.py", "config.py")


def fresh_summary(cycle: int, turn: int) -> str:
    """A summary rebuilt from raw turns only: shares no sentence with the previous one."""
    name = FILES[cycle % len(FILES)]
    return (
        f"## Goal\nCycle {cycle} goal: explain why {name} yields a stale entry.\n"
        f"## Plan\nStep {cycle}: instrument {name}, compare keys, then decide.\n"
        f"## Decisions\nDecision {cycle}: {name} stays unchanged until turn {turn}.\n"
        f"## Open errors\nOpen {cycle}: the {name} lookup misses after refresh.\n"
        f"## Next action\nAction {cycle}: grep {name} for the builder at turn {turn}.\n"
    )


class Session:
    """Writes Claude Code records with consistent uuids, parents and timestamps."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.records: list[dict[str, object]] = []
        self.clock = START
        self.count = 0
        self.parent: str | None = None

    def _base(self, kind: str) -> dict[str, object]:
        self.count += 1
        self.clock += timedelta(seconds=7)
        uid = f"{self.session_id[:8]}-{self.count:05d}"
        record: dict[str, object] = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/demo",
            "sessionId": self.session_id,
            "version": "2.1.0",
            "type": kind,
            "uuid": uid,
            "timestamp": self.clock.isoformat().replace("+00:00", "Z"),
        }
        self.parent = uid
        return record

    def user_text(self, text: str) -> None:
        record = self._base("user")
        record["message"] = {"role": "user", "content": text}
        self.records.append(record)

    def tool_call(self, turn: int, context: int, tool: str, tool_input: dict[str, object]) -> None:
        record = self._base("assistant")
        record["requestId"] = f"req_{self.session_id[:6]}_{turn:04d}"
        record["message"] = {
            "id": f"msg_{self.session_id[:6]}_{turn:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "tool_use", "id": f"toolu_{turn:04d}", "name": tool, "input": tool_input}
            ],
            "stop_reason": "tool_use",
            "usage": {
                "input_tokens": 12,
                "cache_creation_input_tokens": 2_000,
                "cache_read_input_tokens": context - 2_012,
                "output_tokens": 180,
            },
        }
        self.records.append(record)
        result = self._base("user")
        text = f"[turn {turn}] " + ("fixture cache key line; " * 16)
        block = {"tool_use_id": f"toolu_{turn:04d}", "type": "tool_result", "content": text}
        result["message"] = {"role": "user", "content": [block]}
        self.records.append(result)

    def compaction(self, before: int, after: int, summary: str) -> None:
        boundary = self._base("system")
        boundary.update(
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "logicalParentUuid": boundary["parentUuid"],
                "parentUuid": None,
                "compactMetadata": {"trigger": "auto", "preTokens": before, "postTokens": after},
            }
        )
        self.records.append(boundary)
        record = self._base("user")
        record["isCompactSummary"] = True
        record["isVisibleInTranscriptOnly"] = True
        record["message"] = {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran "
            "out of context. The conversation is summarized below:\n" + summary,
        }
        self.records.append(record)

    def write(self, name: str) -> None:
        lines = [json.dumps(r, separators=(",", ":")) for r in self.records]
        (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def tools() -> Iterator[tuple[str, dict[str, object]]]:
    """Reading and searching, over and over: the phase stays ``explore``."""
    while True:
        yield "Read", {"file_path": "/work/demo/src/cache.py"}
        yield "Grep", {"pattern": "cache_key", "path": "/work/demo/src"}


def build(session_id: str, intervals: list[int], *, nested: bool) -> Session:
    """A session: 20 turns to reach the trigger, then one compaction per interval.

    The context after each compaction is what the next interval's growth fills
    up to the trigger again, so the intervals are exactly the ones given.
    """
    session = Session(session_id)
    session.user_text("The test_refresh test fails with a stale fixture; find out why and fix it.")
    calls = tools()
    turn = 0
    summary = SCHEMA
    growth = FIRST_GROWTH
    context = TRIGGER - FIRST_INTERVAL * growth
    for cycle, interval in enumerate([FIRST_INTERVAL, *intervals], start=1):
        if cycle > 1:
            growth = GROWTH
            context = TRIGGER - interval * growth
        for _ in range(interval):
            turn += 1
            tool, tool_input = next(calls)
            session.tool_call(turn, context, tool, tool_input)
            context += growth
        after = TRIGGER - (intervals[cycle - 1] if cycle <= len(intervals) else 9) * GROWTH
        note = f"\nCycle {cycle}: read cache.py and the fixture again up to turn {turn}; " + (
            f"constraint restated for cycle {cycle}: keep the public API. " * 3
        )
        summary = summary + note if nested else fresh_summary(cycle, turn)
        session.compaction(context, after, summary)
    for _ in range(2):
        turn += 1
        tool, tool_input = next(calls)
        session.tool_call(turn, after + GROWTH, tool, tool_input)
        after += GROWTH
    return session


def main() -> None:
    """Write every generated file."""
    build("4e1f0c5a-livelock-0004", [9, 9, 9, 9, 9, 9, 7, 5, 3, 2], nested=True).write(
        "claude_livelock.jsonl"
    )
    build("7b2d9e31-reset-0004", [11, 10, 12, 9], nested=False).write("claude_reset.jsonl")


if __name__ == "__main__":
    main()
