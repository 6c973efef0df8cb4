"""Values out of transcript records: text, numbers, timestamps."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of blocks.

    Text blocks (``text``, ``input_text``, ``output_text``) give their text, a
    ``tool_result`` block its nested content; images and other binary blocks
    give nothing (their size is not text). Read with a stack, not recursion: a
    file may nest blocks or lists as deep as JSON allows.
    """
    parts: list[str] = []
    stack = [content]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item:
                parts.append(item)
        elif isinstance(item, dict):
            text = item.get("text")
            if isinstance(text, str):
                stack.append(text)
            elif item.get("type") == "tool_result":
                stack.append(item.get("content"))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return "\n".join(parts)


def arguments_text(value: Any) -> str | None:
    """A tool call's arguments as the JSON text the model produced."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string or a number (s, ms or ns)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond any float
            return None
        if not math.isfinite(seconds):
            return None  # dividing infinity by 1000 never gets below 1e11
        while seconds > 1e11:  # milliseconds, microseconds or nanoseconds
            seconds /= 1000.0
        return seconds
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
