"""A summary is judged only against the template its summarizer was given.

The summaries below follow each summarizer's real prompt: Claude Code's nine sections as
63 real summaries carry them (``shared/data/real-sessions-2``, headings kept verbatim,
prose replaced by filler), LangChain's from the installed middleware's own prompt, and
the example formats of strands', OpenHands' and pydantic-ai's prompts as they stand.
"""

from __future__ import annotations

import re

import pytest
from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT

from otel_compaction.config import Settings
from otel_compaction.lineage.schema import judge_summary, recognise
from otel_compaction.semconv import SummaryTemplateName as Name

FIELDS = Settings().schema_fields
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit"

CLAUDE_CODE_HEADINGS = (
    "1. Primary Request and Intent:",
    "2. Key Technical Concepts:",
    "3. Files and Code Sections:",
    "4. Errors and fixes:",
    "5. Problem Solving:",
    "6. All user messages:",
    "7. Pending Tasks:",
    "8. Current Work:",
    "9. Optional Next Step:",
)
"""The headings every templated real Claude Code summary carries, in its order."""


def _sections(headings: tuple[str, ...] | list[str], lead: str = "") -> str:
    return lead + "".join(f"{h}\n{FILLER}\n{FILLER}\n\n" for h in headings)


def test_real_claude_code_summaries_are_judged_on_their_template_and_covered() -> None:
    """A summary shaped as the real ones ("Summary:" then nine numbered sections, filler
    prose) follows Claude Code's template and covers all five fields: no finding."""
    text = _sections(CLAUDE_CODE_HEADINGS, lead=f"{FILLER}\n\nSummary:\n")
    verdict = judge_summary(text, FIELDS)
    assert verdict.template is Name.CLAUDE_CODE
    assert verdict.coverage == 1.0
    assert verdict.asked == FIELDS


@pytest.mark.parametrize(
    "style",
    [
        "{n}. **{t}:**",
        "{n}. **{t}**:",
        "## {n}. {t}",
        "**{t}**",
    ],
)
def test_bold_and_plain_headings_alike(style: str) -> None:
    """Claude Code's headings count bold, as Markdown headings or numbered, alike."""
    titles = [h.split(". ", 1)[1].rstrip(":") for h in CLAUDE_CODE_HEADINGS]
    headings = [style.format(n=i + 1, t=t) for i, t in enumerate(titles)]
    verdict = judge_summary(_sections(headings), FIELDS)
    assert (verdict.template, verdict.coverage) == (Name.CLAUDE_CODE, 1.0)


def test_a_claude_code_summary_that_dropped_sections_is_judged_on_what_it_was_asked() -> None:
    """Four of nine sections, only one of them a field's: 1 of 5 fields covered."""
    kept = (CLAUDE_CODE_HEADINGS[0], CLAUDE_CODE_HEADINGS[1], CLAUDE_CODE_HEADINGS[2])
    verdict = judge_summary(_sections(kept), FIELDS)
    assert verdict.template is Name.CLAUDE_CODE
    assert verdict.coverage == pytest.approx(0.2)
    assert verdict.missing == ("plan", "decisions", "open_errors", "next_action")


def test_a_free_form_summary_follows_no_template_and_is_not_judged() -> None:
    """The real free-form Claude Code summaries ("Analysis:", "Summary:", "## Context",
    "## Current Focus"...) and filler-only ones: template unknown, no coverage."""
    free = _sections(["Analysis:", "Summary:", "## Context", "## Current Focus"])
    for text in (free, f"{FILLER}\n{FILLER}"):
        verdict = judge_summary(text, FIELDS)
        assert verdict.template is Name.UNKNOWN
        assert verdict.coverage is None


def test_langchain_summary_from_its_own_prompt() -> None:
    """A summary under the headings of the installed SummarizationMiddleware prompt is
    LangChain's, fully covered; without NEXT STEPS it misses plan and next action."""
    headings = re.findall(r"^## .+$", DEFAULT_SUMMARY_PROMPT, re.MULTILINE)
    assert headings == ["## SESSION INTENT", "## SUMMARY", "## ARTIFACTS", "## NEXT STEPS"]
    full = judge_summary(_sections(headings), FIELDS)
    assert (full.template, full.coverage) == (Name.LANGCHAIN, 1.0)
    assert full.asked == ("goal", "plan", "decisions", "next_action")
    partial = judge_summary(_sections(headings[:3]), FIELDS)
    assert (partial.template, partial.coverage) == (Name.LANGCHAIN, 0.5)
    assert partial.missing == ("plan", "next_action")


STRANDS_SUMMARY = """## Conversation Summary
* Topic 1: the user asked why test_parse_dates fails
* Next step: fix the timezone handling in parse() and rerun the suite

## Tools Executed
* run_tests: 1 failed, AssertionError: expected 2024-01-01T00:00Z, got 2023-12-31T23:00Z
"""
"""The example format of strands' summarization prompt, naming the next step and the
failing assertion (the issue's summary that scored 0 of 5)."""


def test_a_strands_summary_is_recognised_and_not_judged() -> None:
    """strands' template asks for none of the five fields: recognised, not judged."""
    verdict = judge_summary(STRANDS_SUMMARY, FIELDS)
    assert verdict.template is Name.STRANDS
    assert verdict.coverage is None


OPENHANDS_SUMMARY = """USER_CONTEXT: Fix FITS card float representation issue
COMPLETED: Modified mod_float() in card.py, all tests passing
PENDING: Create PR, update documentation
CODE_STATE: mod_float() in card.py updated
TESTS: test_format() passed
CHANGES: str(val) replaces f"{val:.16G}"
DEPS: None modified
VERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d
"""
"""The code-task example of OpenHands' condenser prompt."""


def test_openhands_summary_from_its_prompts_example() -> None:
    """OpenHands' example is its template, covering the goal and plan it asks for; without
    PENDING it covers half."""
    verdict = judge_summary(OPENHANDS_SUMMARY, FIELDS)
    assert (verdict.template, verdict.coverage, verdict.asked) == (
        Name.OPENHANDS,
        1.0,
        ("goal", "plan"),
    )
    dropped = OPENHANDS_SUMMARY.replace("PENDING: Create PR, update documentation\n", "")
    assert judge_summary(dropped, FIELDS).missing == ("plan",)


def test_pydantic_ai_summary_from_its_prompt() -> None:
    """pydantic-ai's SummarizingCompaction sections: judged on intent and next steps only,
    the sections it may omit when empty are not asked."""
    headings = ["## Intent", "## Key decisions", "## Artifacts", "## Next steps"]
    verdict = judge_summary(_sections(headings), FIELDS)
    assert (verdict.template, verdict.coverage) == (Name.PYDANTIC_AI, 1.0)
    assert verdict.asked == ("goal", "plan", "next_action")


def test_codex_style_handoff_has_no_template() -> None:
    """Codex asks for a handoff without headings: nothing can be said from headings."""
    text = "The user wants the flaky test fixed. Progress: found the race. Next: add a lock."
    assert judge_summary(text, FIELDS).template is Name.UNKNOWN


def test_generic_headings_alone_recognise_nothing() -> None:
    """ "Summary" and "Next steps" are shared by several templates and common in free
    text: without a heading of its own, no template is recognised."""
    assert recognise(_sections(["## Summary", "## Next steps", "## Artifacts"])) is None


def test_pinned_schema_judges_every_summary_on_the_five_fields() -> None:
    """With schema_template=pinned, the strands summary is judged on all five fields: its
    "Next step:" key carries plan and next action (a known heading), the rest is missing."""
    verdict = judge_summary(STRANDS_SUMMARY, FIELDS, "pinned")
    assert verdict.template is Name.PINNED
    assert verdict.coverage == pytest.approx(0.4)
    assert verdict.missing == ("goal", "decisions", "open_errors")
    named = judge_summary(_sections([f"## {f}" for f in FIELDS]), FIELDS, "pinned")
    assert named.coverage == 1.0


def test_a_named_template_is_forced_and_off_judges_nothing() -> None:
    """Naming a template judges every summary against it; off judges none."""
    forced = judge_summary(f"{FILLER}\nUSER_CONTEXT: fix it\n", FIELDS, "openhands")
    assert (forced.template, forced.coverage) == (Name.OPENHANDS, 0.5)
    off = judge_summary(OPENHANDS_SUMMARY, FIELDS, "off")
    assert off.coverage is None


def test_no_text_no_verdict() -> None:
    """Without a summary's text there is no template and no coverage."""
    assert judge_summary(None, FIELDS) == judge_summary(None, FIELDS, "pinned")
    assert judge_summary(None, FIELDS).template is None
