"""Values out of transcript records: text, numbers, timestamps."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from otel_compaction.signals.tokens import estimate_tokens


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of blocks.

    Text blocks (``text``, ``input_text``, ``output_text``) give their text, a
    ``tool_result`` block its nested content; images and other binary blocks
    give nothing (their size is not text).
    """
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _block_text(content)
    if isinstance(content, list):
        return "\n".join(t for t in (content_text(item) for item in content) if t)
    return ""


def _block_text(block: dict[str, Any]) -> str:
    text = block.get("text")
    if isinstance(text, str):
        return text
    if block.get("type") == "tool_result":
        return content_text(block.get("content"))
    return ""


def tokens_of(text: str) -> int:
    """The project's token estimate for text nobody counted (see ``signals.tokens``)."""
    return estimate_tokens(text)


def arguments_text(value: Any) -> str | None:
    """A tool call's arguments as the JSON text the model produced."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def as_int(value: Any) -> int | None:
    """A non-negative token count from a JSON value, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string or a number (s, ms or ns)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        while seconds > 1e11:  # milliseconds, microseconds or nanoseconds
            seconds /= 1000.0
        return seconds if math.isfinite(seconds) else None
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        # Transcripts write UTC; a naive time is read as UTC, never as local time.
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
