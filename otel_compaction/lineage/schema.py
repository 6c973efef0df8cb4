"""Preserve-schema coverage of a summary (docs/concepts.md#the-preserve-schema).

A summary is judged only against the template its summarizer was given, never
against headings it was not asked for (:func:`judge_summary`):

- ``schema_template="auto"`` (the default): the known template the summary follows
  (:mod:`otel_compaction.lineage.templates`: Claude Code, LangChain, pydantic-ai,
  OpenHands, strands), on the preserve-schema fields that template asks for. A
  summary that follows no known template is not judged (its template is
  ``unknown``), nor one whose template asks for none of the fields (strands').
  Only a template checked on real summaries flags (:func:`flags_by_default`).
- ``schema_template="pinned"``: the user's summarizer was given ``schema_fields``
  (the preserve-schema's goal, plan, decisions, open_errors, next_action): every summary is
  judged on all of them, under their own names or a known template's headings.
- a template's name: every summary is judged against that template.
- ``"off"``: none is judged.

A heading counts as present when the summary names it as a heading or a key,
case-insensitively, with ``_``, ``-`` and spaces interchangeable and an optional
plural ``s``. Accepted shapes, shown for ``next_action``::

    ## Next action            (Markdown heading, any level, numbered or not, trailing
                               words allowed)
    **Next action**           (a line that is only the name, bold or not, numbered or not)
    next_action: ...          (a key, also "- Next action: ...", "9. Next action:",
                               "1. **Next action:**")
    "next_action": "..."      (a JSON or YAML-with-quotes key, anywhere)
    <next_action>             (an XML-style tag)

A name merely used in prose ("the plan was to...") does not count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from otel_compaction.lineage.templates import KNOWN_TEMPLATES, TEMPLATES, SummaryTemplate
from otel_compaction.semconv import SummaryTemplateName

# Line prefixes allowed before a key: indentation, quote marks, list bullets, emphasis,
# numbering ("1." / "2)").
_EMPHASIS = r"[*_`]*"
_NUMBER = r"(?:\d+[.)][ \t]*)?"
_PREFIX = rf"^[ \t>]*(?:[-*+][ \t]+)?{_EMPHASIS}{_NUMBER}"

SECTION_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        field: tuple(dict.fromkeys(h for t in KNOWN_TEMPLATES for h in t.fields.get(field, ())))
        for field in ("goal", "plan", "decisions", "open_errors", "next_action")
    }
)
"""The known templates' headings that also count as a field when the schema is pinned."""


@dataclass(frozen=True, slots=True)
class SchemaVerdict:
    """What can be said of one summary's preserve-schema coverage.

    ``template`` is None when there is no text; ``unknown`` when no template is known
    (not judged). ``coverage`` is None when nothing is judged; ``asked`` the fields judged.
    """

    template: SummaryTemplateName | None
    coverage: float | None = None
    missing: tuple[str, ...] = ()
    asked: tuple[str, ...] = ()


def _name_pattern(name: str) -> str:
    parts = [re.escape(p) for p in re.split(r"[\s_-]+", name.strip()) if p]
    pattern = r"[\s_-]+".join(parts)
    if pattern.endswith("s"):
        pattern = pattern[:-1]
    return pattern + r"s?"


@lru_cache(maxsize=256)
def _heading_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """A summary line or key naming any of ``names`` in one of the accepted shapes."""
    name = "(?:" + "|".join(_name_pattern(n) for n in names) + ")"
    shapes = (
        rf"^[ \t]*#{{1,6}}[ \t]*{_EMPHASIS}{_NUMBER}{_EMPHASIS}{name}\b",
        rf"{_PREFIX}{_EMPHASIS}{name}{_EMPHASIS}[ \t]*:?{_EMPHASIS}[ \t]*$",
        rf"{_PREFIX}{_EMPHASIS}{name}{_EMPHASIS}[ \t]*[:=]",
        rf"[\"']{name}[\"'][ \t]*:",
        rf"<{name}>",
    )
    return re.compile("|".join(f"(?:{s})" for s in shapes), re.IGNORECASE | re.MULTILINE)


def _present(text: str, *names: str) -> bool:
    return _heading_pattern(names).search(text) is not None


def schema_coverage(
    text: str | None, fields: Sequence[str]
) -> tuple[float | None, tuple[str, ...]]:
    """Fraction of ``fields`` present in ``text`` (under their names or a known template's
    headings) and the missing ones, in order: the pinned schema's measure.

    Returns ``(None, ())`` when there is no text to score.
    """
    if text is None or not fields:
        return None, ()
    missing = tuple(f for f in fields if not _present(text, f, *SECTION_ALIASES.get(f, ())))
    return (len(fields) - len(missing)) / len(fields), missing


def recognise(text: str) -> SummaryTemplate | None:
    """The known template ``text`` follows: the one with the most of its headings present
    (at least two, one of them its own), ties broken in table order; None if none."""
    best: tuple[int, SummaryTemplate] | None = None
    for template in KNOWN_TEMPLATES:
        found = [h for h in template.headings if _present(text, h)]
        if len(found) < 2 or not any(h in template.signature for h in found):
            continue
        if best is None or len(found) > best[0]:
            best = (len(found), template)
    return best[1] if best is not None else None


def template_coverage(text: str, template: SummaryTemplate, fields: Sequence[str]) -> SchemaVerdict:
    """``text`` judged on the fields of ``fields`` that ``template`` asks for."""
    asked = tuple(f for f in fields if f in template.fields)
    if not asked:
        return SchemaVerdict(template.name)
    missing = tuple(f for f in asked if not _present(text, *template.fields[f]))
    return SchemaVerdict(template.name, (len(asked) - len(missing)) / len(asked), missing, asked)


def judge_summary(text: str | None, fields: Sequence[str], mode: str = "auto") -> SchemaVerdict:
    """The verdict on a summary's coverage under the ``schema_template`` setting ``mode``
    (see the module docstring)."""
    if text is None:
        return SchemaVerdict(None)
    if mode == "off":
        return SchemaVerdict(SummaryTemplateName.UNKNOWN)
    if mode == SummaryTemplateName.PINNED:
        coverage, missing = schema_coverage(text, fields)
        return SchemaVerdict(SummaryTemplateName.PINNED, coverage, missing, tuple(fields))
    template = TEMPLATES.get(mode) or recognise(text)
    if template is None:
        return SchemaVerdict(SummaryTemplateName.UNKNOWN)
    return template_coverage(text, template, fields)


def asked_fields(template: str | None, fields: Sequence[str]) -> tuple[str, ...]:
    """The fields of ``fields`` a summary judged against ``template`` is asked for."""
    if template == SummaryTemplateName.PINNED:
        return tuple(fields)
    known = TEMPLATES.get(template) if template is not None else None
    return tuple(f for f in fields if known is not None and f in known.fields)


def flags_by_default(template: str | None) -> bool:
    """Whether a summary judged against ``template`` under ``schema_template = "auto"`` may
    be flagged: the pinned schema, or a known template checked on real summaries."""
    if template == SummaryTemplateName.PINNED:
        return True
    known = TEMPLATES.get(template) if template is not None else None
    return known is not None and known.calibrated


def template_headings(template: str | None, field: str) -> tuple[str, ...]:
    """The headings that carry ``field`` in a known ``template`` (none when pinned)."""
    known = TEMPLATES.get(template) if template is not None else None
    return known.fields.get(field, ()) if known is not None else ()


def template_title(template: str | None) -> str | None:
    """The summarizer a known template name stands for ("Claude Code's compaction
    summary"); None for the pinned schema or an unknown name."""
    known = TEMPLATES.get(template) if template is not None else None
    return known.title if known is not None else None
