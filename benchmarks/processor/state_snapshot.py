"""What the processor's state snapshot costs: write and read time, and file size.

Fills a ``ConversationState`` with N conversations of 8 turns and 2 compactions
each (the conversations of the memory figure in ``docs/benchmarks.md``), then
times ``SnapshotStore.save`` (encode, write, fsync, rename) and
``SnapshotStore.load`` (read, check, decode, rebuild) in CPU and wall time,
best of ``--rounds``. Run it with

    benchmarks/run snapshot [--conversations 10000] [--json benchmarks/results/state_snapshot.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from benchmarks._meta import commit, now
from otel_compaction.config import Settings
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.otlp.state import ConversationState
from otel_compaction.processor.snapshot import SnapshotStore
from otel_compaction.semconv import CompactionSource

T = TypeVar("T")


def _filled(n: int, settings: Settings) -> ConversationState:
    state = ConversationState(settings)
    for c in range(n):
        analyzer = state.registry.get(f"conversation-{c:06d}")
        for turn in range(1, 9):
            if turn in (4, 7):
                analyzer.observe_compaction(
                    CompactionObservation(
                        CompactionSource.EXPLICIT,
                        tokens_before=120_000 + turn,
                        tokens_after=30_000,
                        compaction_id=f"c{c}-{turn}",
                        turn_index=turn,
                    )
                )
            analyzer.observe_turn(
                TurnObservation(20_000 * turn, model="claude-sonnet-4-5",
                                new_content_tokens=3_000, tool_output_tokens=(1_500,),
                                tool_calls=("read_file",))
            )  # fmt: skip
    return state


def _timed(fn: Callable[[], T]) -> tuple[float, float, T]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main(argv: list[str] | None = None) -> int:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    settings = Settings.model_validate({"max_conversations": max(args.conversations, 1)})
    load = os.getloadavg()
    state = _filled(args.conversations, settings)
    saves, loads, size = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        store = SnapshotStore(Path(tmp), settings, max_conversations=args.conversations)
        for _ in range(args.rounds):
            wall, cpu, saved = _timed(lambda: store.save(state))
            saves.append((wall, cpu))
            size = saved.size
            fresh = ConversationState(settings)
            wall, cpu, restored = _timed(lambda: store.load(fresh))  # noqa: B023
            if restored != args.conversations:
                raise SystemExit(f"restored {restored} of {args.conversations} conversations")
            loads.append((wall, cpu))
    out = {
        "conversations": args.conversations,
        "bytes": size,
        "bytes_per_conversation": round(size / max(args.conversations, 1)),
        "save_wall_s": round(min(w for w, _ in saves), 3),
        "save_cpu_s": round(min(c for _, c in saves), 3),
        "load_wall_s": round(min(w for w, _ in loads), 3),
        "load_cpu_s": round(min(c for _, c in loads), 3),
        "python": sys.version.split()[0],
        "date": now(),
        "commit": commit(),
        "command": " ".join(["benchmarks/run snapshot", *(sys.argv[1:] if argv is None else argv)]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average": {"before": load, "after": os.getloadavg()},
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
