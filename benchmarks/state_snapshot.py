"""What the processor's state snapshot costs: write and read time, and file size.

Fills a ``ConversationState`` with N conversations of 8 turns and 2 compactions
each (the conversations of the memory figure in ``docs/benchmarks.md``), then
times ``SnapshotStore.save`` (encode, write, fsync, rename) and
``SnapshotStore.load`` (read, check, decode, rebuild) in CPU and wall time,
best of ``--rounds``. Run it with

    .venv/bin/python benchmarks/state_snapshot.py --conversations 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.model import CompactionObservation, TurnObservation
from otel_compaction.processor.snapshot import SnapshotStore
from otel_compaction.processor.state import ConversationState
from otel_compaction.semconv import CompactionSource


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


def _timed(fn: object) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()  # type: ignore[operator]
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main(argv: list[str] | None = None) -> int:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    settings = Settings(max_conversations=max(args.conversations, 1))
    state = _filled(args.conversations, settings)
    saves, loads, size = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        store = SnapshotStore(Path(tmp), settings, max_conversations=args.conversations)
        for _ in range(args.rounds):
            wall, cpu, saved = _timed(lambda: store.save(state))
            saves.append((wall, cpu))
            size = saved.size  # type: ignore[attr-defined]
            fresh = ConversationState(settings)
            wall, cpu, restored = _timed(lambda: store.load(fresh))  # noqa: B023
            assert restored == args.conversations, restored
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
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
