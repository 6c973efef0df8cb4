"""The text of generated runs: tool outputs that carry facts, and summaries in four styles.

Every tool output opens with one *fact* line unique to its run and turn, then filler
lines of pseudo-words. A summary is built from the facts of the turns it replaces
(a summarizer that read the raw turns), under the headings of its style:

- ``schema``: the five preserve-schema fields as Markdown headings (full coverage);
- ``claude_code``: Claude Code's nine numbered sections, "Primary Request and Intent"
  to "Optional Next Step" (a complete summary of a real summarizer);
- ``partial``: two of the five fields (40% coverage);
- ``prose``: one paragraph, no headings (no coverage).

A *carried-over* summary is the previous summary's text verbatim followed by the new
part; a *fresh* one is built from raw turns only. Everything is drawn from a seeded
``random.Random``, so the same seed writes the same text in every process.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from otel_compaction.testing.llm_api import estimate_tokens

STYLES = ("schema", "claude_code", "partial", "prose")
FULL_COVERAGE_STYLES = frozenset({"schema", "claude_code"})
"""The styles whose summaries cover the preserve schema (no schema finding is true)."""

_SYLLABLE_TEXT = (
    "ka ri to mu ne sa lo vi de po ga fu ze hi ra mo ku ta be ni so wa ly xo qi "
    "dra plen stor vek mir gol tan bris cu fe"
)
_SYLLABLES = tuple(_SYLLABLE_TEXT.split())


class TextSource:
    """Seeded words, fact lines and tool outputs for one agent."""

    def __init__(self, rng: random.Random, label: str) -> None:
        self.rng = rng
        self.label = label
        self._serial = 0

    def word(self) -> str:
        """A pseudo-word of two or three syllables."""
        return "".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 3)))

    def words(self, count: int) -> str:
        """``count`` pseudo-words separated by spaces."""
        return " ".join(self.word() for _ in range(count))

    def path(self) -> str:
        """A source file path."""
        return f"src/{self.word()}/{self.word()}.py"

    def fact(self, tool: str, path: str) -> str:
        """A fact line unique to this source: what one tool call found."""
        self._serial += 1
        return (
            f"fact {self.label}-{self._serial}: {tool} {path} line {self.rng.randint(1, 900)} "
            f"shows {self.words(6)}"
        )

    def output(self, fact: str, tokens: int) -> str:
        """A tool output of about ``tokens`` tokens that opens with ``fact``."""
        lines = [fact]
        while estimate_tokens("\n".join(lines)) < tokens:
            lines.append(f"{self.rng.randint(1, 999):>4}  {self.words(7)}")
        return "\n".join(lines)

    def padding(self, tokens: int) -> str:
        """Re-derived constraints of about ``tokens`` tokens (the livelock's residual growth)."""
        lines: list[str] = []
        while estimate_tokens("\n".join(lines)) < tokens:
            lines.append(f"- constraint {self.words(9)}")
        return "\n".join(lines)


def summary(style: str, goal: str, facts: Sequence[str], quoted: Sequence[str] = ()) -> str:
    """A summary of ``style`` stating ``goal`` and the ``facts`` of the replaced turns.

    ``quoted`` outputs are included verbatim in place of the fact list (an extractive
    compaction: the removed content survives in the new context).
    """
    listed = "\n".join(f"- {f}" for f in facts) or "- nothing new"
    if quoted:  # the facts open the outputs: quoting the outputs keeps them
        listed = "Tool outputs kept verbatim:\n" + "\n\n".join(quoted)
    body = listed
    if style == "schema":
        return (
            f"## Goal\n{goal}\n\n## Plan\n- continue from the last step\n\n"
            f"## Decisions\n{body}\n\n## Open errors\n- none confirmed\n\n"
            f"## Next action\n- run the next check"
        )
    if style == "claude_code":
        return (
            "Summary:\n"
            f"1. Primary Request and Intent:\n   {goal}\n"
            "2. Key Technical Concepts:\n   - the module under test\n"
            f"3. Files and Code Sections:\n{body}\n"
            "4. Errors and fixes:\n   - none confirmed\n"
            "5. Problem Solving:\n   - narrowed the cause\n"
            "6. All user messages:\n   - the task\n"
            "7. Pending Tasks:\n   - finish the task\n"
            "8. Current Work:\n   - the last step\n"
            "9. Optional Next Step:\n   - run the next check"
        )
    if style == "partial":
        return f"## Goal\n{goal}\n\n## Notes\n{body}\n\n## Next action\n- run the next check"
    return f"So far, working on: {goal} Findings follow.\n{body}\nThe work goes on from here."


def carried(previous: str | None, new: str) -> str:
    """A carried-over summary: the previous summary verbatim, then the new part."""
    if not previous:
        return new
    return f"{previous}\n\nUpdate since the previous summary:\n{new}"
