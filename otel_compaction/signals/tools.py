"""What a turn did, by tool category: the evidence of the phase filter.

Each tool call falls into one :class:`ToolCategory`; a turn without tool calls
is ``none``. Resolution order for one call, first match wins:

1. ``Settings.tool_categories`` (``OTEL_PYTHON_COMPACTION_TOOL_CATEGORIES``,
   ``name=category``), matched on the exact name, then case-insensitively;
2. command-aware tools, when their arguments are known: a shell tool (``bash``,
   ``shell``, ``Bash``, ``exec_command``...) by its command line (tests, file
   edits, read-only commands, anything else) and the text-editor tool
   (``str_replace_based_edit_tool``) by its sub-command (``view`` reads);
3. :data:`DEFAULT_TOOL_CATEGORIES`, case-insensitively, also on the last part of
   a namespaced name (``mcp__fs__read_file``, ``functions.read_file``);
4. words in the name (``search_code`` reads, ``write_config`` edits...);
5. anything else: ``run``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from otel_compaction._bounded import BoundedMap
from otel_compaction._once import OncePerKey

logger = logging.getLogger(__name__)


class ToolCategory(StrEnum):
    """The kind of work one tool call does."""

    READ = "read"  # reading, searching, listing, fetching
    EDIT = "edit"  # changing files
    TEST = "test"  # running tests
    RUN = "run"  # any other command or tool
    NONE = "none"  # no tool call, or a planning-only tool


CATEGORIES: Final = tuple(ToolCategory)
"""The categories in the column order of the emission matrix."""


def _words(text: str) -> frozenset[str]:
    """The space-separated words of ``text``, for the compact vocabularies below."""
    return frozenset(text.split())


_ALIASES: Final = {"search": ToolCategory.READ, "write": ToolCategory.EDIT}

_READ = (
    "read read_file readfile read_many_files view view_file open_file cat head tail "
    "grep grep_search search search_files search_code codebase_search file_search "
    "glob ls list list_dir list_directory list_files find find_files tree "
    "web_fetch webfetch fetch web_search websearch notebookread get_file_contents"
)
_EDIT = (
    "edit edit_file multiedit multi_edit str_replace write write_file create_file "
    "apply_patch insert replace patch notebookedit delete_file rename_file move_file"
)
_TEST = "run_tests run_test runtests pytest test tests jest vitest go_test cargo_test"
_NONE = "todowrite todo_write todoread todo_read update_plan think plan exitplanmode"

DEFAULT_TOOL_CATEGORIES: Mapping[str, ToolCategory] = MappingProxyType(
    {
        **dict.fromkeys(_words(_READ), ToolCategory.READ),
        **dict.fromkeys(_words(_EDIT), ToolCategory.EDIT),
        **dict.fromkeys(_words(_TEST), ToolCategory.TEST),
        **dict.fromkeys(_words(_NONE), ToolCategory.NONE),
    }
)
"""Lower-case tool names of common agents (Claude Code, Codex, OpenHands, MCP servers)."""

SHELL_TOOLS: Final = _words(
    "bash shell sh zsh terminal run_command run_terminal_cmd run_shell_command "
    "execute_command exec exec_command local_shell container.exec bash_tool powershell cmd "
    "shell_command"
)
"""Tools whose category depends on the command line they run."""

EDITOR_TOOLS: Final = frozenset(("str_replace_based_edit_tool", "str_replace_editor"))
"""Tools whose category depends on their ``command`` argument (``view`` reads)."""

_NAME_WORDS: Final = (
    (ToolCategory.TEST, _words("test tests pytest")),
    (ToolCategory.EDIT, _words("edit write patch replace create insert delete")),
    (ToolCategory.READ, _words("read view search grep glob list find fetch get")),
)

_TEST_CMD = re.compile(
    r"\b(?:py\.?test|tox|nox|unittest|jest|vitest|mocha|rspec|phpunit|ctest)\b"
    r"|\b(?:go|cargo|dotnet|mvn|gradle|npm|yarn|pnpm|bun|deno|make|mix|swift|zig)"
    r"\s+(?:run\s+)?(?:test|tests|check)\b|\bnpm\s+t\b"
)
_EDIT_CMD = re.compile(
    r"\bsed\s+(?:-\w*\s+)*-i|\bperl\s+-\w*i|\bgit\s+apply\b|\bapply_patch\b|\bpatch\s+-p\d"
    r"|\btee\s+[^-|]|\bcat\s*>"
    r"|(?<![0-9&>])>>?\s*(?!/dev/)[\w.~/-]"  # output redirected into a file
)
_READ_CMDS: Final = _words(
    "cat ls ll grep egrep rg ag ack find fd head tail less more wc tree stat file "
    "which pwd echo nl du diff jq awk sed "
    "get-content get-childitem get-item select-string test-path gc gci dir type"
)
_READ_GIT: Final = _words("log show diff status blame grep ls-files branch")
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;|\n]")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_MAX_COMMAND_CHARS = 4096


def categorize_tool(
    name: str,
    arguments: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> ToolCategory:
    """The category of one tool call; see the module docstring for the rules.

    Args:
        name: the tool's name as the model called it.
        arguments: the call's arguments, as the JSON text the model produced (or
            a plain command line); used for shell and editor tools only.
        overrides: ``name=category`` pairs that win over everything else.
    """
    if overrides:
        forced = _override(name, overrides)
        if forced is not None:
            return forced
    key, short = _name_keys(name)
    if arguments is not None:
        if key in SHELL_TOOLS or short in SHELL_TOOLS:
            return categorize_command(_command_text(arguments))
        if short in EDITOR_TOOLS:
            sub = _argument(arguments, "command")
            return ToolCategory.READ if sub == "view" else ToolCategory.EDIT
    return _by_name(name, key, short)


def categorize_command(command: str) -> ToolCategory:
    """The category of a shell command line: test, edit, read-only, or run."""
    text = command[:_MAX_COMMAND_CHARS].lower()
    if _TEST_CMD.search(text):
        return ToolCategory.TEST
    # Quoted text is an argument: a | or > inside "a|b" is neither a pipe nor a redirect.
    text = _QUOTED.sub("''", text)
    if _EDIT_CMD.search(text):
        return ToolCategory.EDIT
    if text.strip() and all(_is_read_segment(seg) for seg in _SEGMENT_SPLIT.split(text)):
        return ToolCategory.READ
    return ToolCategory.RUN


def parse_category(value: str) -> ToolCategory | None:
    """The category named by ``value`` (``read``, ``search``, ``edit``...), or ``None``."""
    key = value.strip().lower()
    try:
        return ToolCategory(key)
    except ValueError:
        return _ALIASES.get(key)


def _override(name: str, overrides: Mapping[str, str]) -> ToolCategory | None:
    raw = overrides.get(name)
    if raw is None:
        lowered = name.strip().lower()
        raw = next((v for k, v in overrides.items() if k.strip().lower() == lowered), None)
    return None if raw is None else parse_category(raw)


def _name_keys(name: str) -> tuple[str, str]:
    """The lower-cased name, and its last namespace part (``mcp__fs__read_file``: ``read_file``)."""
    key = name.strip().lower()
    return key, re.split(r"__|\.|/", key)[-1] if key not in SHELL_TOOLS else key


def reads_arguments(name: str, overrides: Mapping[str, str] | None = None) -> bool:
    """Whether :func:`categorize_tool` looks at the arguments of ``name`` (shell and editor
    tools without an override); for any other name the arguments change nothing."""
    if overrides and _override(name, overrides) is not None:
        return False
    key, short = _name_keys(name)
    return key in SHELL_TOOLS or short in SHELL_TOOLS or short in EDITOR_TOOLS


def _by_name(name: str, key: str, short: str) -> ToolCategory:
    for candidate in (key, short):
        if candidate in SHELL_TOOLS:
            return ToolCategory.RUN
        if candidate in EDITOR_TOOLS:
            return ToolCategory.EDIT
        found = DEFAULT_TOOL_CATEGORIES.get(candidate)
        if found is not None:
            return found
    words = set(_WORD_SPLIT.split(_split_camel(re.split(r"__|\.|/", name.strip())[-1])))
    for category, vocabulary in _NAME_WORDS:
        if words & vocabulary:
            return category
    return ToolCategory.RUN


def _split_camel(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _is_read_segment(segment: str) -> bool:
    words = [w for w in segment.split() if "=" not in w or w.startswith("-")]
    if not words:
        return True
    head = words[0].rsplit("/", 1)[-1]
    if head == "cd":
        return True
    if head == "git":
        return len(words) > 1 and words[1] in _READ_GIT
    if head == "sed":
        return "-n" in words
    return head in _READ_CMDS


def _command_text(arguments: str) -> str:
    """The command line inside a shell tool's arguments (JSON object, list, or text)."""
    parsed = _parse_json(arguments)
    if isinstance(parsed, dict):
        for key in ("command", "cmd", "script", "input"):
            value = parsed.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return " ".join(str(part) for part in value)
        return ""
    if isinstance(parsed, list):
        return " ".join(str(part) for part in parsed)
    return arguments


def _argument(arguments: str, key: str) -> str | None:
    parsed = _parse_json(arguments)
    if isinstance(parsed, dict):
        value = parsed.get(key)
        return value.strip().lower() if isinstance(value, str) else None
    return None


def _parse_json(text: str) -> object:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


class ToolCategorizer:
    """:func:`categorize_tool` with the overrides of ``Settings.tool_categories``.

    The overrides are validated on construction (an unknown category is ignored,
    with one warning per process), and results are cached (bounded), because this
    runs for every tool call of every turn: by name, since most tools' arguments
    change nothing, and by name and arguments for short arguments of the shell and
    editor tools (an agent repeats its commands).
    """

    __slots__ = ("_by_arguments", "_cache", "_overrides")

    MAX_CACHED = 1024
    MAX_CACHED_ARGUMENTS = 256
    MAX_ARGUMENT_CHARS = 1024
    """Longer arguments (file contents, long scripts) are categorised again each time."""

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self._overrides: dict[str, str] = {}
        for tool, value in (overrides or {}).items():
            if parse_category(value) is None:
                _warn_bad_override(tool, value)
                continue
            self._overrides[tool] = value
        # name -> (its category without arguments, whether arguments can change it)
        self._cache: BoundedMap[str, tuple[ToolCategory, bool]] = BoundedMap(self.MAX_CACHED)
        self._by_arguments: BoundedMap[tuple[str, str], ToolCategory] = BoundedMap(
            self.MAX_CACHED_ARGUMENTS
        )

    def __call__(self, name: str, arguments: str | None = None) -> ToolCategory:
        """The category of one call of ``name`` with ``arguments``."""
        entry = self._cache.cached(name, self._by_name)
        if arguments is None or not entry[1]:
            return entry[0]
        if len(arguments) > self.MAX_ARGUMENT_CHARS:
            return categorize_tool(name, arguments, self._overrides)
        return self._by_arguments.cached((name, arguments), self._with_arguments)

    def _by_name(self, name: str) -> tuple[ToolCategory, bool]:
        overrides = self._overrides
        return categorize_tool(name, None, overrides), reads_arguments(name, overrides)

    def _with_arguments(self, key: tuple[str, str]) -> ToolCategory:
        return categorize_tool(key[0], key[1], self._overrides)


_MAX_WARNED_OVERRIDES = 64
_warned_overrides = OncePerKey(_MAX_WARNED_OVERRIDES)


def _warn_bad_override(tool: str, value: str) -> None:
    """Warn once per bad override (every conversation builds a categorizer)."""
    if not _warned_overrides.claim((tool, value)):
        return
    logger.warning(
        "ignoring tool category override %s=%s: the category must be one of %s",
        tool,
        value,
        ", ".join(c.value for c in CATEGORIES),
    )
