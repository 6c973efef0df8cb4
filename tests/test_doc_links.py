"""The README's and docs/' relative links open: their files exist and their anchors are
headings (or ``id``/``name`` anchors) of the target, as GitHub names them."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose(text: str) -> list[str]:
    """The lines of a Markdown page outside fenced code blocks, code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        lines.append("" if fenced else _CODE_SPAN.sub(lambda m: "`" + m.group()[1:-1] + "`", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, without punctuation but ``-``
    and ``_``, spaces as ``-`` (inline markup reduced to its text first)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")  # HTML tags, code marks
    text = re.sub(r"(\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w))", "", text)  # emphasis marks
    kept = (
        ch for ch in text.lower() if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N", "M")
    )
    return "".join(kept).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor a page offers: its headings' slugs (``-1``, ``-2`` for repeats) and
    explicit HTML anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose(page.read_text(encoding="utf-8")):
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(_HTML_ANCHOR.findall(line))
    return frozenset(found)


def links(page: Path) -> list[str]:
    """The relative link targets of a page's prose (not code), as written."""
    out = []
    for line in _prose(page.read_text(encoding="utf-8")):
        line = _CODE_SPAN.sub("", line)
        out += [t for t in _LINK.findall(line) if not _EXTERNAL.match(t)]
    return out


def broken(page: Path, target: str) -> str | None:
    """Why ``target`` (a link on ``page``) does not open, or None."""
    path_part, _, fragment = target.partition("#")
    dest = (page.parent / path_part).resolve() if path_part else page
    if not dest.exists():
        return f"{_shown(dest)} does not exist"
    if fragment and dest.suffix == ".md" and fragment not in anchors(dest):
        return f"no heading #{fragment} in {_shown(dest)}"
    return None


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def test_slug_follows_githubs_rules() -> None:
    """Headings become GitHub's anchors: markup dropped, punctuation dropped, spaces hyphens."""
    assert slug("Without Docker: `scripts/stack`") == "without-docker-scriptsstack"
    assert slug("`no_progress` (Codex's guard)") == "no_progress-codexs-guard"
    assert slug("Two paths, one count") == "two-paths-one-count"
    assert slug("**Bold** and [a link](x.md)") == "bold-and-a-link"


def test_repeated_headings_get_numbered_anchors(tmp_path: Path) -> None:
    """A second heading with the same text is ``<slug>-1``, as on GitHub."""
    page = tmp_path / "p.md"
    page.write_text("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n", encoding="utf-8")
    assert anchors(page) == {"a", "notes", "notes-1"}


def test_a_dead_anchor_is_reported(tmp_path: Path) -> None:
    """A link to a heading that is not there is found, with the page it points at."""
    (tmp_path / "a.md").write_text("# Here\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[x](a.md#there) [y](a.md#here) `[z](a.md#code)`\n", encoding="utf-8")
    assert links(page) == ["a.md#there", "a.md#here"]
    assert broken(page, "a.md#here") is None
    assert broken(page, "a.md#there") is not None


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_opens(page: Path) -> None:
    """Each relative link of the page names an existing file and, for a Markdown page, an
    existing anchor."""
    dead = [f"{target}: {why}" for target in links(page) if (why := broken(page, target))]
    assert not dead, "\n".join(dead)
