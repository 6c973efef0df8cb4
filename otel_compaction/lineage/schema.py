"""Preserve-schema coverage of a summary (source note 001).

A field counts as present when the summary names it as a heading or a key,
case-insensitively, with ``_``, ``-`` and spaces interchangeable and an optional
plural ``s``. Accepted shapes, shown for ``next_action``::

    ## Next action            (Markdown heading, any level, trailing words allowed)
    **Next action**           (a line that is only the name, bold or not)
    next_action: ...          (a key, also as a list item "- Next action: ...")
    "next_action": "..."      (a JSON or YAML-with-quotes key, anywhere)
    <next_action>             (an XML-style tag)

A name merely used in prose ("the plan was to...") does not count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

# Line prefixes allowed before a key: indentation, quote marks, list bullets,
# numbering ("1." / "2)").
_PREFIX = r"^[ \t>]*(?:[-*+][ \t]+|\d+[.)][ \t]+)?"
_EMPHASIS = r"[*_`]*"


@lru_cache(maxsize=64)
def _field_pattern(field: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.split(r"[\s_-]+", field.strip()) if p]
    name = r"[\s_-]+".join(parts)
    if name.endswith("s"):
        name = name[:-1]
    name += r"s?"
    shapes = (
        rf"^[ \t]*#{{1,6}}[ \t]*{_EMPHASIS}{name}\b",
        rf"{_PREFIX}{_EMPHASIS}{name}{_EMPHASIS}[ \t]*$",
        rf"{_PREFIX}{_EMPHASIS}{name}{_EMPHASIS}[ \t]*[:=]",
        rf"[\"']{name}[\"'][ \t]*:",
        rf"<{name}>",
    )
    return re.compile("|".join(f"(?:{s})" for s in shapes), re.IGNORECASE | re.MULTILINE)


def schema_coverage(
    text: str | None, fields: Sequence[str]
) -> tuple[float | None, tuple[str, ...]]:
    """Fraction of ``fields`` present in ``text`` and the missing ones, in order.

    Returns ``(None, ())`` when there is no text to score.
    """
    if text is None or not fields:
        return None, ()
    missing = tuple(f for f in fields if not _field_pattern(f).search(text))
    return (len(fields) - len(missing)) / len(fields), missing
