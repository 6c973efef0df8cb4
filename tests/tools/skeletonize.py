"""Skeletonize a real agent session so it can be kept as test data.

Usage::

    python -m tests.tools.skeletonize IN.jsonl OUT.jsonl [--max-bytes N]

The format is detected from the first record (as ``otel-compaction analyze`` does): a
Claude Code transcript, a Codex CLI rollout, or an OTLP/JSON log export (one
``ExportLogsServiceRequest`` per line, bare or wrapped in a capture sink's
``{"body_json": ...}``, which is unwrapped). What stays and what is replaced is listed
in ``tests/data/real-sessions/README.md``: structure, record types, ids, timestamps,
token usage, model and tool names and all compaction metadata stay; prose becomes
same-length filler; tool inputs become short hashes and shell commands a skeleton that
keeps their tool category. The output is a pure function of the input; ``--max-bytes``
cuts it at a record boundary.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from tests.tools.skeleton_records import claude_record, codex_record, otlp_logs_request
from tests.tools.skeleton_text import keyed
from tests.tools.skeleton_values import Json

CODEX_TYPES = frozenset(("session_meta", "response_item", "turn_context", "event_msg", "compacted"))


def detect(record: dict[str, Json]) -> str:
    """``otlp-logs``, ``codex`` or ``claude-code``, from one parsed record."""
    if "resourceLogs" in record or "body_json" in record:
        return "otlp-logs"
    if record.get("type") in CODEX_TYPES and "payload" in record:
        return "codex"
    return "claude-code"


def _otlp(record: dict[str, Json]) -> dict[str, Json]:
    body = record.get("body_json", record)
    return otlp_logs_request(body if isinstance(body, dict) else {})


CONVERTERS: dict[str, Callable[[dict[str, Json]], dict[str, Json]]] = {
    "otlp-logs": _otlp,
    "codex": codex_record,
    "claude-code": claude_record,
}


def skeleton_lines(lines: Iterable[str], max_bytes: int | None = None) -> Iterator[str]:
    """The skeleton of each non-blank JSON line, in order; stops before ``max_bytes``.

    Raises:
        ValueError: a line is not a JSON object (its number is in the message).
    """
    convert: Callable[[dict[str, Json]], dict[str, Json]] | None = None
    written = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: not JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise ValueError(f"line {number}: not a JSON object")
        if convert is None:
            convert = CONVERTERS[detect(record)]
        out = json.dumps(convert(record), ensure_ascii=False, separators=(",", ":")) + "\n"
        written += len(out.encode("utf-8"))
        if max_bytes is not None and written > max_bytes:
            return
        yield out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``IN OUT [--max-bytes N]``."""
    parser = argparse.ArgumentParser(prog="skeletonize", description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--max-bytes", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        text = skeletonize(args.source.read_bytes(), args.max_bytes)
    except (OSError, ValueError) as exc:
        print(f"skeletonize: {args.source}: {exc}", file=sys.stderr)
        return 1
    args.target.write_text(text, encoding="utf-8")
    return 0


def skeletonize(source: bytes, max_bytes: int | None = None) -> str:
    """The skeleton of a whole file, keyed by its content (see :func:`keyed`).

    Raises:
        ValueError: the file is not UTF-8 JSON lines.
    """
    with keyed(source):
        return "".join(skeleton_lines(source.decode("utf-8").split("\n"), max_bytes))


if __name__ == "__main__":
    sys.exit(main())
