"""The report's legend: every finding kind explained, each linked to a section that exists."""

from __future__ import annotations

import re
from pathlib import Path

from otel_compaction.config import Settings
from otel_compaction.report import analyze_files
from otel_compaction.report.html import render_html
from otel_compaction.report.legend import LEGEND, docs_dir
from otel_compaction.semconv import FindingKind
from tests.transcripts import TESTDATA

ROOT = Path(__file__).resolve().parents[2]


def _slugs(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", markdown, re.M):
        kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
        out.add(kept.replace(" ", "-"))
    return out


def test_every_finding_kind_has_a_legend_entry_and_its_section_exists() -> None:
    """Each FindingKind is explained, and each entry's anchor is a heading of docs/concepts.md."""
    assert {e.kind for e in LEGEND} == set(FindingKind)
    slugs = _slugs((ROOT / "docs" / "concepts.md").read_text(encoding="utf-8"))
    assert {e.anchor for e in LEGEND} <= slugs
    assert len({(e.kind, e.rule) for e in LEGEND}) == len(LEGEND)


def test_legend_rules_are_the_rules_detectors_raise() -> None:
    """The legend's rule names are the ones the detectors' code passes to ctx.finding."""
    code = "".join(p.read_text() for p in (ROOT / "otel_compaction" / "detectors").glob("*.py"))
    raised = set(re.findall(r'ctx\.finding\(\s*FindingKind\.\w+,\s*"(\w+)"', code))
    # Rules named in a variable first (rule = "..."), and the boundary rule's two (veto.py):
    # return "ceiling" if self.at_ceiling else "veto".
    raised |= set(re.findall(r'\brule(?:, \w+)? = "(\w+)"', code))
    for pair in re.findall(r'return "(\w+)" if [\w.]+ else "(\w+)"', code):
        raised |= set(pair)
    assert {e.rule for e in LEGEND} == raised


def test_page_links_the_findings_to_their_legend_and_the_legend_to_the_docs() -> None:
    """A finding's kind links to its legend row, marked found; the row links to concepts.md."""
    report = analyze_files([TESTDATA / "claude_livelock.jsonl"], Settings())
    page = render_html(report, settings=Settings())
    finding = report.findings[0]
    row = f"legend-{finding.kind.value}-{finding.rule}"
    assert f"href='#{row}'" in page
    assert f"<tr id='{row}'>" in page
    docs = docs_dir()
    assert docs is not None  # the tests run from the source tree
    assert f"{(docs / 'concepts.md').as_uri()}#re-expansion-livelock" in page
