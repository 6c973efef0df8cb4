"""Point 4 of a clean install: the README's path for pip users works, and what it cites exists.

The demo extra alone runs the demo (what ``scripts/demo`` installs) and shows a
flagged compaction; the README's pip-user part points only at what a pip user has,
or says that a file is in the repository.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clean_install.conftest import ROOT, CleanEnv

README = ROOT / "README.md"
USER_PART_END = "## In the repository"
REPO_PATH = re.compile(r"`((?:docs|collector|dashboards|tests|benchmarks|scripts)/[^`]*)`")
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_readme_user_part_marks_repository_files_as_such() -> None:
    """Before "In the repository", a paragraph citing a repository file says it is in it."""
    user_part = README.read_text(encoding="utf-8").split(USER_PART_END, 1)[0]
    header, _, rest = user_part.partition("## Install")
    offenders = [
        p.strip()[:80]
        for p in _paragraphs(rest)
        if (REPO_PATH.search(p) or LINK.search(p)) and "repository" not in p
    ]
    assert not offenders
    assert "checkout of the repository" in header  # the two set-up commands say where they run


def test_readme_opens_with_exactly_the_two_set_up_commands() -> None:
    """The first code block of the README holds the demo and the test command, nothing else."""
    first_block = README.read_text(encoding="utf-8").split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["scripts/demo", "scripts/test"]


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    """Every relative link in README.md and docs/ names a file or folder that exists."""
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if "://" not in target
        and not target.startswith("mailto:")
        and not (page.parent / target).exists()
    ]
    assert not broken


def test_scripts_demo_installs_the_demo_extra_only() -> None:
    """scripts/demo sets up .venv with the demo extra, not the test extra."""
    demo = (ROOT / "scripts" / "demo").read_text(encoding="utf-8")
    setup = (ROOT / "scripts" / "setup-env").read_text(encoding="utf-8")
    assert "scripts/setup-env demo" in demo
    assert "EXTRA=${1:-test}" in setup
    assert '-e ".[$EXTRA]"' in setup


@pytest.mark.slow
def test_demo_extra_alone_runs_the_readme_demo_and_flags_the_compaction(
    clean_env: Callable[..., CleanEnv], tmp_path: Path
) -> None:
    """`pip install 'otel-compaction[demo]'`, then the README's two commands: a flagged turn 30."""
    env = clean_env("demo")
    readme = README.read_text(encoding="utf-8")
    assert "otel-compaction demo --scenario note000-turn30" in readme
    assert "otel-compaction analyze otel-compaction-demo/traces.jsonl" in readme
    demo = env.run("otel-compaction", "demo", "--scenario", "note000-turn30", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"^ok +note000-turn30/debugger +boundary_compaction@30 ", demo.stdout, re.M)
    out = tmp_path / "otel-compaction-demo"
    assert (out / "report.html").stat().st_size > 100_000  # plotly inline: the extra is there
    analyzed = env.run(
        "otel-compaction", "analyze", "otel-compaction-demo/traces.jsonl", cwd=tmp_path
    )
    assert analyzed.returncode == 0, analyzed.stderr
    assert "FLAGGED turn 30: boundary_compaction" in analyzed.stdout


CITATION = re.compile(r"source notes?\b|\bnotes? 00[014]\b|DESIGN\.md", re.IGNORECASE)
CONCEPTS_ANCHOR = re.compile(r"concepts\.md#([a-z0-9_-]+)(?![a-z0-9_}-])")  # not an f-string field


def _tracked_text_files() -> list[Path]:
    import subprocess

    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / n for n in names if n.endswith((".py", ".md", ".json", ".yaml", ".yml"))]


def test_the_reasons_are_cited_from_the_repository() -> None:
    """No code, doc or runbook cites notes or a design file that the repository lacks."""
    this = Path(__file__).resolve()
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _tracked_text_files()
        if path.resolve() != this and path.is_file()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if CITATION.search(line)
    ]
    assert not offenders


def test_every_cited_concepts_section_exists() -> None:
    """Every section of docs/concepts.md cited anywhere (by its anchor) is one of its headings."""
    headings = re.findall(r"^#{1,6} +(.+?) *$", (ROOT / "docs" / "concepts.md").read_text(), re.M)
    slugs = {
        "".join(ch for ch in h.lower() if ch.isalnum() or ch in " -_").replace(" ", "-")
        for h in headings
    }
    cited = {
        anchor
        for path in _tracked_text_files()
        if path.is_file()
        for anchor in CONCEPTS_ANCHOR.findall(path.read_text(encoding="utf-8"))
    }
    assert cited
    assert not sorted(cited - slugs)
