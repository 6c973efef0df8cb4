"""Replay a recorded OTLP/JSON traces file to an OTLP/HTTP endpoint, shifted to now.

The file holds one ``ExportTraceServiceRequest`` per line (the Collector's file
exporter format, and the processor's golden test data). Every span, event and
link keeps its relative timing; the whole recording is moved so its last span
ends now, so Jaeger's default one-hour search window finds it.

Run from the repository root, with the stack of ``collector/compose.yaml`` up::

    python3 dashboards/tools/replay.py tests/processor/testdata/livelock_004.traces.jsonl

Standard library only, so it runs without the project's virtual environment.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_ENDPOINT = "http://localhost:4318"
_TIME_KEYS = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano")


def load(path: Path) -> list[dict[str, Any]]:
    """The requests of an OTLP/JSON lines file (blank lines skipped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _timed(requests: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every span and span event: the objects that carry OTLP timestamps."""
    for request in requests:
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    yield span
                    yield from span.get("events", [])


def shift_to(requests: list[dict[str, Any]], end_ns: int) -> None:
    """Move every timestamp by the same offset so the latest one becomes ``end_ns``."""
    stamps = [int(obj[k]) for obj in _timed(requests) for k in _TIME_KEYS if k in obj]
    if not stamps:
        return
    offset = end_ns - max(stamps)
    for obj in _timed(requests):
        for key in _TIME_KEYS:
            if key in obj:
                obj[key] = str(int(obj[key]) + offset)


def post(endpoint: str, request: dict[str, Any]) -> None:
    """POST one request as OTLP/JSON to ``endpoint``/v1/traces; raise on an HTTP error."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"endpoint must be an http(s) URL, got {endpoint!r}")
    url = endpoint.rstrip("/") + "/v1/traces"
    body = json.dumps(request).encode()
    headers = {"Content-Type": "application/json"}
    req = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310 - http(s) checked above
    with urllib.request.urlopen(req, timeout=10):  # noqa: S310 - http(s) checked above
        pass


def replay(path: Path, endpoint: str, *, shift: bool = True) -> int:
    """Send the recording in ``path`` to ``endpoint``; returns how many requests were sent."""
    requests = load(path)
    if shift:
        shift_to(requests, time.time_ns())
    for request in requests:
        post(endpoint, request)
    return len(requests)


def main(argv: list[str] | None = None) -> int:
    """Command line: replay each file given, in order."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE.jsonl")
    parser.add_argument("--endpoint", default=DEFAULT_ENDPOINT, help="OTLP/HTTP base URL")
    parser.add_argument(
        "--keep-time", action="store_true", help="send the recorded timestamps unchanged"
    )
    args = parser.parse_args(argv)
    for path in args.files:
        sent = replay(path, args.endpoint, shift=not args.keep_time)
        print(f"{path}: {sent} request(s) sent to {args.endpoint}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
