"""The demo agents' tools: a pretend repository whose outputs are deterministic text.

Each tool returns about as many characters as the scenario asks for (the sizes
decide how fast the context fills), and every output is different from every
other, as real tool outputs are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.demo.plan import filler, words_of

_CODE = words_of(
    "def return self order total currency rounding fixture assert expected actual "
    "import from class adapter storage client request response cache key value "
    "for in if else raise error parse decimal quantize items line price tax"
)
_TEST = words_of(
    "passed failed error assert collected test orders totals integration fixture "
    "setup teardown seconds warning deprecated rounding mismatch expected got"
)

TOOL_SPECS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("read_file", "Read a file.", ("path",)),
    ("grep", "Search the code.", ("pattern", "path")),
    ("edit_file", "Replace text in a file.", ("path", "old", "new")),
    ("run_tests", "Run a test target.", ("target",)),
)
"""The tools the agents offer the model: name, description, string arguments."""


@dataclass
class Workspace:
    """Runs the agent's tool calls.

    Args:
        sizes: characters of output per tool name (``read_file``, ``grep``,
            ``edit_file``, ``run_tests``); unknown tools answer briefly.
        label: mixed into every output, so two agents' outputs never coincide.
    """

    sizes: Mapping[str, int]
    label: str = ""
    calls: int = field(default=0, init=False)

    def run(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The output of one tool call."""
        self.calls += 1
        seed = f"{self.label}/{self.calls}/{name}/{sorted(arguments.items())}"
        size = self.sizes.get(name, 80)
        if name == "read_file":
            head = f"# {arguments.get('path')} (read {self.calls})\n"
            return head + filler(seed, size, _CODE)
        if name == "grep":
            head = f"src/orders/totals.py:{self.calls}: {arguments.get('pattern')}\n"
            return head + filler(seed, size, _CODE)
        if name == "edit_file":
            head = f"Applied the edit to {arguments.get('path')}; diff:\n"
            return head + filler(seed, size, _CODE)
        if name == "run_tests":
            head = f"{arguments.get('target')}: 1 failed, 41 passed (run {self.calls})\n"
            return head + filler(seed, size, _TEST)
        return f"{name}: done ({self.calls})"
