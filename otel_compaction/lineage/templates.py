"""The summary templates of known summarizers, mapped onto the preserve-schema fields.

A summary is judged only against the template its summarizer was given
(docs/concepts.md#the-preserve-schema): the user's pinned schema, or a known
summarizer's own headings. Each known template lists the preserve-schema fields it
*asks for*, by the headings that carry them; the fields it does not ask for are not
judged. Its other headings only help recognise it. Taken from each summarizer's own
prompt (docs/detectors.md#summary-schema-coverage quotes them):

- ``claude_code``: Claude Code's compaction summary, nine numbered sections, all
  present in every one of the 63 templated real summaries of the held-out calibration
  set ("1. Primary Request and Intent:" ... "9. Optional Next Step:"). The one template
  checked on real summaries (``calibrated``): the only one that flags by default.
- ``langchain``: LangChain's ``SummarizationMiddleware`` default prompt (langchain
  1.5): ``## SESSION INTENT``, ``## SUMMARY`` (choices made, their reasons, the
  options rejected), ``## ARTIFACTS``, ``## NEXT STEPS`` (what remains, what to do
  next); every section filled or "None".
- ``pydantic_ai``: pydantic-ai-harness' ``SummarizingCompaction`` default prompt:
  ``## Intent``, ``## Key decisions``, ``## Artifacts``, ``## Current state``,
  ``## Next steps``, ``## Open questions``, "omitting a section only if it has no
  content": only the goal and what remains always have content, so only they are
  asked. (pydantic-ai's documented history-processor example asks for a free-form
  summary: no template.)
- ``openhands``: OpenHands' ``LLMSummarizingCondenser`` prompt: ``USER_CONTEXT``,
  ``TASK_TRACKING``, ``COMPLETED``, ``PENDING``, ``CURRENT_STATE``, and for code tasks
  ``CODE_STATE``, ``TESTS``, ``CHANGES``, ``DEPS``, ``VERSION_CONTROL_STATUS``.
  ``TESTS`` is asked for code tasks only, so open errors are not judged.
- ``strands``: strands' ``SummarizingConversationManager`` prompt (strands-agents
  1.62): bullet points under ``## Conversation Summary`` and ``## Tools Executed``
  (plus code and key insights): it asks for none of the five fields, so a strands
  summary is recognised and not judged.

Codex's compaction prompt and langmem's ask for a summary without headings (Codex:
"Goal / user objective", "What remains to be done" as bullets of what to include), so
nothing can be said of them from headings: they are not judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from otel_compaction.semconv import SummaryTemplateName as Name


@dataclass(frozen=True, slots=True)
class SummaryTemplate:
    """A known summarizer's section headings, mapped onto the preserve-schema fields.

    Args:
        name: the value of ``compaction.summary.template`` (``claude_code``...).
        title: the summarizer, for reasons ("Claude Code's compaction summary").
        fields: each preserve-schema field the template asks for, and the headings
            that carry it (lower case; ``_``, ``-`` and spaces interchangeable).
        others: its other headings (recognition only).
        signature: the headings that only this template uses: one of them must be
            present for a summary to be recognised as following it.
        calibrated: its judgement was checked on real summaries; only then does it
            flag by default (``schema_template = "auto"``). The others are measured
            (``compaction.summary.schema_coverage``) and flag when named.
    """

    name: Name
    title: str
    fields: Mapping[str, tuple[str, ...]]
    others: tuple[str, ...] = ()
    signature: tuple[str, ...] = ()
    calibrated: bool = False

    @property
    def headings(self) -> tuple[str, ...]:
        """Every heading of the template, fields' first, without repeats."""
        seen = [h for names in self.fields.values() for h in names] + list(self.others)
        return tuple(dict.fromkeys(seen))


def _fields(**names: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType(names)


CLAUDE_CODE = SummaryTemplate(
    Name.CLAUDE_CODE,
    "Claude Code's compaction summary",
    _fields(
        goal=("primary request and intent",),
        plan=("pending tasks",),
        decisions=("problem solving",),
        open_errors=("errors and fixes",),
        next_action=("optional next step",),
    ),
    others=(
        "key technical concepts",
        "files and code sections",
        "all user messages",
        "current work",
    ),
    signature=(
        "primary request and intent",
        "key technical concepts",
        "files and code sections",
        "errors and fixes",
        "problem solving",
        "all user messages",
        "pending tasks",
        "optional next step",
    ),
    calibrated=True,  # the 63 templated real summaries of the held-out set: all covered
)
LANGCHAIN = SummaryTemplate(
    Name.LANGCHAIN,
    "LangChain's SummarizationMiddleware summary",
    _fields(
        goal=("session intent",),
        plan=("next steps",),
        decisions=("summary",),
        next_action=("next steps",),
    ),
    others=("artifacts",),
    signature=("session intent",),
)
PYDANTIC_AI = SummaryTemplate(
    Name.PYDANTIC_AI,
    "pydantic-ai's SummarizingCompaction summary",
    _fields(goal=("intent",), plan=("next steps",), next_action=("next steps",)),
    others=("key decisions", "artifacts", "current state", "open questions"),
    signature=("intent", "key decisions", "open questions"),
)
OPENHANDS = SummaryTemplate(
    Name.OPENHANDS,
    "OpenHands' condenser summary",
    _fields(goal=("user context",), plan=("pending",)),
    others=(
        "task tracking",
        "completed",
        "current state",
        "code state",
        "tests",
        "changes",
        "deps",
        "version control status",
    ),
    signature=("user context", "task tracking", "code state", "version control status"),
)
STRANDS = SummaryTemplate(
    Name.STRANDS,
    "strands' SummarizingConversationManager summary",
    _fields(),
    others=("conversation summary", "tools executed", "key insights"),
    signature=("conversation summary", "tools executed"),
)

KNOWN_TEMPLATES: tuple[SummaryTemplate, ...] = (
    CLAUDE_CODE,
    LANGCHAIN,
    PYDANTIC_AI,
    OPENHANDS,
    STRANDS,
)
"""The templates a summary is recognised by, in the order ties are broken."""

TEMPLATES: Mapping[str, SummaryTemplate] = MappingProxyType(
    {t.name.value: t for t in KNOWN_TEMPLATES}
)
"""The known templates by name (``schema_template`` may name one)."""
