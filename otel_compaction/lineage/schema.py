"""Preserve-schema coverage of a summary (docs/concepts.md#the-preserve-schema).

A field counts as present when the summary names it as a heading or a key,
case-insensitively, with ``_``, ``-`` and spaces interchangeable and an optional
plural ``s``. Accepted shapes, shown for ``next_action``::

    ## Next action            (Markdown heading, any level, trailing words allowed)
    **Next action**           (a line that is only the name, bold or not)
    next_action: ...          (a key, also as a list item "- Next action: ...")
    "next_action": "..."      (a JSON or YAML-with-quotes key, anywhere)
    <next_action>             (an XML-style tag)

A name merely used in prose ("the plan was to...") does not count.

Real summarizers head their sections in their own words; :data:`SECTION_ALIASES`
maps those headings onto the default fields (a heading may serve two fields):

- Claude Code's compaction summary: "Primary Request and Intent" (goal),
  "Pending Tasks" (plan), "Problem Solving" (decisions), "Errors and fixes"
  (open_errors), "Optional Next Step" (next_action); its other sections (Key
  Technical Concepts, Files and Code Sections, All user messages, Current Work)
  map onto none.
- LangChain's ``SummarizationMiddleware`` default prompt: "SESSION INTENT"
  (goal), "SUMMARY" (decisions: the prompt asks it for the choices made, their
  reasons and the options rejected), "NEXT STEPS" (plan and next_action: what
  remains, and what to do next); "ARTIFACTS" maps onto none.
- langmem asks for a free-form summary (no sections): it is scored on the
  field names alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

# Line prefixes allowed before a key: indentation, quote marks, list bullets,
# numbering ("1." / "2)").
_PREFIX = r"^[ \t>]*(?:[-*+][ \t]+|\d+[.)][ \t]+)?"
_EMPHASIS = r"[*_`]*"

SECTION_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "goal": ("primary request and intent", "primary request", "session intent", "intent"),
        "plan": ("pending tasks", "remaining tasks", "next steps"),
        "decisions": ("problem solving", "key decisions", "summary"),
        "open_errors": ("errors and fixes", "errors", "open issues", "blockers"),
        "next_action": ("optional next step", "next step", "next steps"),
    }
)
"""Other headings that count as a field (see the module docstring)."""


def _name_pattern(field: str) -> str:
    parts = [re.escape(p) for p in re.split(r"[\s_-]+", field.strip()) if p]
    name = r"[\s_-]+".join(parts)
    if name.endswith("s"):
        name = name[:-1]
    return name + r"s?"


@lru_cache(maxsize=64)
def _field_pattern(field: str) -> re.Pattern[str]:
    names = [_name_pattern(n) for n in (field, *SECTION_ALIASES.get(field, ()))]
    name = "(?:" + "|".join(names) + ")"
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
