"""A long Claude Code transcript of a given size, written record by record (for memory tests).

The records have the shapes of the calibration set's (``tests/data/real-sessions``
README: user tool results, assistant calls with ``message.usage`` and a tool use,
``compact_boundary`` with ``compactMetadata`` and the ``isCompactSummary`` user record
after it); the content is filler. The context grows by 0.5k-3k tokens a call and is
compacted above 160k, about every 75 calls.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

SESSION = "0b7e6a1c-long-session"


def write_long_session(path: Path, size: int, seed: int = 7) -> int:
    """Write a transcript of at least ``size`` bytes to ``path``; return its turns."""
    rnd = random.Random(seed)
    state: dict[str, Any] = {"parent": None, "written": 0}
    context, turn = 20_000, 0
    with path.open("w", encoding="utf-8") as out:

        def write(record: dict[str, Any]) -> None:
            record["uuid"] = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
            record.update(parentUuid=state["parent"], sessionId=SESSION, isSidechain=False)
            state["parent"] = record["uuid"]
            line = json.dumps(record) + "\n"
            out.write(line)
            state["written"] += len(line)

        while state["written"] < size:
            turn += 1
            when = f"2026-03-01T{turn // 3600 % 24:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}.000Z"
            result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}",
                      "content": "x" * rnd.randint(200, 2000)}  # fmt: skip
            write({"type": "user", "timestamp": when,
                   "message": {"role": "user", "content": [result]}})  # fmt: skip
            context += rnd.randint(500, 3000)
            usage = {"input_tokens": 3, "cache_read_input_tokens": context - 3,
                     "cache_creation_input_tokens": 0, "output_tokens": 200}  # fmt: skip
            call = {"type": "tool_use", "id": f"toolu_{turn + 1}",
                    "name": rnd.choice(["Read", "Grep", "Bash", "Edit"]),
                    "input": {"file_path": f"h:{rnd.getrandbits(64):016x}"}}  # fmt: skip
            message = {"id": f"msg_{turn:08d}", "model": "claude-sonnet-4-5",
                       "role": "assistant", "content": [call], "usage": usage}  # fmt: skip
            write({"type": "assistant", "timestamp": when, "message": message})
            if context > 160_000:
                write({"type": "system", "subtype": "compact_boundary", "timestamp": when,
                       "content": "Conversation compacted", "logicalParentUuid": state["parent"],
                       "compactMetadata": {"trigger": "auto", "preTokens": context}})  # fmt: skip
                write({"type": "user", "timestamp": when, "isCompactSummary": True,
                       "message": {"role": "user",
                                   "content": "Summary:\n1. Primary Request and Intent:\n"
                                   + "y" * 3000}})  # fmt: skip
                context = 30_000
    return turn
