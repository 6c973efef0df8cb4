"""The engine state an agent process keeps per conversation, and what bounds it.

An instrumented agent process holds one ``ConversationAnalyzer`` per conversation in its
``ConversationRegistry`` (at most ``max_conversations``, idle ones expired). This measures
the Python heap (``tracemalloc``, after a full collection) kept per conversation for two
kinds of conversation, each of ``--conversations`` conversations:

- **idle**: 8 turns and 2 compactions, calls without their inputs (the processor's memory
  figure's conversation);
- **long**: ``--turns`` turns of two calls with their inputs known (a read of a new file
  every turn, an edit of a new file every fifth, a test command otherwise), a compaction
  every 40 turns: the rediscovery tracker fills its caps.

What bounds a conversation: ``max_compactions_per_conversation`` records (64 by default,
about 450 bytes each; the first 8 settled ones packed, about 190), the sketches of the last
4 summaries (with content capture), the rediscovery tracker's last 256 call keys (16 bytes
each) and last 64 edited paths (12 bytes each), and its open horizons (one per compaction
or baseline point less than ``rediscovery_horizon`` turns old, each with the keys it
counted). The instrumentation's history store (``inference/``) is bounded on its own and
not counted here.

    benchmarks/run agent-memory [--conversations 200] [--turns 600] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks._meta import commit, now
from otel_compaction.config import Settings
from otel_compaction.engine import ConversationAnalyzer, ConversationRegistry
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.semconv import CompactionSource


def idle(analyzer: ConversationAnalyzer, n: int, _turns: int) -> None:
    """8 turns with tool output and 2 compactions, calls known by name only."""
    for turn in range(1, 9):
        if turn % 4 == 0:
            analyzer.observe_compaction(_compaction(n, turn, 20_000 + 1_000 * turn))
        analyzer.observe_turn(
            TurnObservation(context_tokens=40_000 + 6_000 * turn + n, model="claude-sonnet-4-5",
                            new_content_tokens=6_000 + n, tool_output_tokens=(2_000 + n + turn,),
                            tool_calls=("read_file",), window=200_000)
        )  # fmt: skip


def long(analyzer: ConversationAnalyzer, n: int, turns: int) -> None:
    """``turns`` turns of two calls with known inputs, a compaction every 40 turns."""
    for turn in range(1, turns + 1):
        if turn % 40 == 0:
            analyzer.observe_compaction(_compaction(n, turn, 150_000 + turn))
        read = json.dumps({"file_path": f"/src/f{turn}.py"})
        if turn % 5 == 0:
            second = ("Edit", json.dumps({"file_path": f"/src/e{turn}.py", "old_string": "a"}))
        else:
            second = ("Bash", json.dumps({"command": f"pytest -k t{turn % 7}"}))
        analyzer.observe_turn(
            TurnObservation(context_tokens=30_000 + 900 * (turn % 40), model="claude-sonnet-4-5",
                            new_content_tokens=900, tool_output_tokens=(700, 200),
                            tool_calls=("Read", second[0]), tool_arguments=(read, second[1]),
                            window=200_000)
        )  # fmt: skip


def _compaction(n: int, turn: int, before: int) -> CompactionObservation:
    return CompactionObservation(
        source=CompactionSource.EXPLICIT,
        tokens_before=before,
        tokens_after=30_000 + n,
        compaction_id=f"c{n}-{turn}",
    )


FILLS = {"idle": idle, "long": long}


def per_conversation(kind: str, conversations: int, turns: int) -> dict[str, Any]:
    """Heap kept per conversation of ``kind``, and the 5 largest allocation sites."""
    registry = ConversationRegistry(Settings(max_conversations=conversations + 1))
    fill = FILLS[kind]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(conversations):
        fill(registry.get(f"agent-conversation-{n}"), n, turns)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    top = tracemalloc.take_snapshot().statistics("lineno")[:5]
    tracemalloc.stop()
    return {
        "kind": kind,
        "turns": 8 if kind == "idle" else turns,
        "bytes_per_conversation": round(kept / conversations),
        "top": [(f"{_short(s.traceback[0].filename)}:{s.traceback[0].lineno}",
                 round(s.size / conversations)) for s in top],
    }  # fmt: skip


def _short(filename: str) -> str:
    at = filename.rfind("otel_compaction/")
    return filename[at:] if at >= 0 else Path(filename).name


def main(argv: list[str] | None = None) -> int:
    """Print the figures as JSON (and write them to ``--json``)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=600, help="turns of a long conversation")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    rows = [per_conversation(kind, args.conversations, args.turns) for kind in FILLS]
    out = {
        "conversations": args.conversations,
        "rows": rows,
        "python": sys.version.split()[0],
        "date": now(),
        "commit": commit(),
        "load_average": load,
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
