"""Tool categorisation: names, shell command lines, editor sub-commands, overrides."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import pytest

from otel_compaction.config import Settings
from otel_compaction.signals import (
    DEFAULT_TOOL_CATEGORIES,
    ToolCategorizer,
    ToolCategory,
    categorize_command,
    categorize_tool,
)
from otel_compaction.signals import tools as tools_module

R, E, T, U, N = (
    ToolCategory.READ,
    ToolCategory.EDIT,
    ToolCategory.TEST,
    ToolCategory.RUN,
    ToolCategory.NONE,
)


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("read_file", R),
        ("Read", R),
        ("view", R),
        ("Grep", R),
        ("Glob", R),
        ("ls", R),
        ("web_fetch", R),
        ("WebFetch", R),
        ("Edit", E),
        ("MultiEdit", E),
        ("str_replace", E),
        ("Write", E),
        ("apply_patch", E),
        ("run_tests", T),
        ("pytest", T),
        ("TodoWrite", N),
        ("update_plan", N),
        ("mcp__filesystem__read_file", R),
        ("functions.apply_patch", E),
        ("searchCodebase", R),
        ("write_config", E),
        ("run_integration_tests", T),
        ("deploy_service", U),
        ("bash", U),
    ],
)
def test_names_map_to_categories(name: str, category: ToolCategory) -> None:
    """Known names, namespaced names and name words resolve to their category."""
    assert categorize_tool(name) is category


@pytest.mark.parametrize(
    ("command", "category"),
    [
        ("pytest -q tests/test_fixture.py", T),
        ("python -m pytest -x", T),
        ("cd app && npm test", T),
        ("go test ./...", T),
        ("cargo test --lib", T),
        ("make test", T),
        ("sed -i 's/old/new/' conftest.py", E),
        ("git apply fix.patch", E),
        ("cat > notes.txt <<EOF\nhello\nEOF", E),
        ("echo 'x = 1' > config.py", E),
        ("grep -rn stale_fixture tests | head -20", R),
        ("cd src && git diff HEAD~1", R),
        ("ls -la 2>&1 >/dev/null", R),
        ("sed -n 1,40p app.py", R),
        ("python scripts/migrate.py", U),
        ("git commit -m wip", U),
        ("", U),
    ],
)
def test_shell_commands_map_to_categories(command: str, category: ToolCategory) -> None:
    """A shell command line is a test run, an edit, a read-only look, or another run."""
    assert categorize_command(command) is category
    assert categorize_tool("Bash", json.dumps({"command": command})) is category


def test_shell_arguments_in_every_shape() -> None:
    """Shell arguments may be a JSON object, an argv list, or a bare command line."""
    argv = json.dumps({"command": ["bash", "-lc", "pytest -q"]})
    assert categorize_tool("shell", argv) is T
    assert categorize_tool("exec_command", json.dumps({"cmd": "rg TODO"})) is R
    assert categorize_tool("bash", "pytest tests/") is T
    assert categorize_tool("bash", "{not json") is U


def test_editor_tool_view_reads_and_other_commands_edit() -> None:
    """str_replace_based_edit_tool with command=view reads; its other commands edit."""
    view = json.dumps({"command": "view", "path": "app.py"})
    replace = json.dumps({"command": "str_replace", "path": "app.py"})
    assert categorize_tool("str_replace_based_edit_tool", view) is R
    assert categorize_tool("str_replace_based_edit_tool", replace) is E
    assert categorize_tool("str_replace_based_edit_tool") is E


def test_overrides_win_over_everything() -> None:
    """Settings.tool_categories overrides the table and command analysis, case-insensitively."""
    overrides = {"bash": "run", "Deploy": "test", "lookup": "search"}
    assert categorize_tool("bash", '{"command": "pytest"}', overrides) is U
    assert categorize_tool("deploy", None, overrides) is T
    assert categorize_tool("lookup", None, overrides) is R


def test_categorizer_validates_overrides_once(caplog: pytest.LogCaptureFixture) -> None:
    """An override naming no category is ignored, with one warning however many trackers."""
    settings = Settings(tool_categories={"Read": "bogus", "deploy": "test"})
    with caplog.at_level(logging.WARNING, logger=tools_module.__name__):
        categorize = ToolCategorizer(settings.tool_categories)
        ToolCategorizer(settings.tool_categories)  # a second conversation: no new warning
        assert categorize("Read") is R
        assert categorize("Read") is R
        assert categorize("deploy") is T
    assert len(caplog.records) == 1
    assert "bogus" in caplog.records[0].getMessage()


def _count_work(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Record every call the categorizer makes to :func:`categorize_tool` (its real work)."""
    calls: list[tuple[str, str | None]] = []

    def counted(
        name: str, arguments: str | None = None, overrides: Mapping[str, str] | None = None
    ) -> ToolCategory:
        calls.append((name, arguments))
        return categorize_tool(name, arguments, overrides)

    monkeypatch.setattr(tools_module, "categorize_tool", counted)
    return calls


def _answered_from_memory(
    categorize: ToolCategorizer, calls: list[tuple[str, str | None]], asks: list[tuple[str, str]]
) -> int:
    """How many of ``asks`` (name, arguments) the categorizer answers without working again.

    Asked most recent first, so a cache of N entries can answer at most N of them whatever its
    eviction order: what it computes on a miss is a call already asked.
    """
    hits = 0
    for name, arguments in reversed(asks):
        before = len(calls)
        assert categorize(name, arguments) is categorize_tool(name, arguments)
        hits += len(calls) == before
    return hits


def test_categorizer_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name cache remembers no more than MAX_CACHED names, and does remember."""
    monkeypatch.setattr(ToolCategorizer, "MAX_CACHED", 4)
    calls = _count_work(monkeypatch)
    categorize = ToolCategorizer()
    asks = [(f"tool_{i}", "{}") for i in range(10)]
    for name, arguments in asks:
        categorize(name, arguments)
    assert len(calls) == 10
    assert 1 <= _answered_from_memory(categorize, calls, asks) <= 4


def test_default_table_uses_lower_case_names() -> None:
    """Every key of the default table is lower case, so lookups can lower-case the name."""
    assert all(name == name.lower() for name in DEFAULT_TOOL_CATEGORIES)


_CALLS = [
    ("read_file", '{"path": "a.py"}'),
    ("bash", '{"command": "pytest -q"}'),
    ("bash", '{"command": "cat a.py"}'),
    ("Bash", '{"command": "sed -i s/a/b/ x.py"}'),
    ("bash", None),
    ("mcp__shell__exec_command", '{"cmd": "go test ./..."}'),
    ("str_replace_based_edit_tool", '{"command": "view", "path": "a"}'),
    ("str_replace_based_edit_tool", '{"command": "str_replace", "path": "a"}'),
    ("deploy", '{"command": "pytest"}'),
    ("shell", "x" * 5000 + " pytest"),
    ("search_code", "{not json"),
]


@pytest.mark.parametrize("overrides", [{}, {"bash": "read", "Deploy": "test"}])
def test_categorizer_matches_categorize_tool(overrides: dict[str, str]) -> None:
    """The cached categorizer answers what categorize_tool answers, first call and repeats."""
    categorize = ToolCategorizer(overrides)
    for _ in range(2):
        for name, arguments in _CALLS:
            assert categorize(name, arguments) is categorize_tool(name, arguments, overrides)


def test_categorizer_argument_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands are cached up to MAX_CACHED_ARGUMENTS, long ones never."""
    monkeypatch.setattr(ToolCategorizer, "MAX_CACHED_ARGUMENTS", 3)
    calls = _count_work(monkeypatch)
    categorize = ToolCategorizer()
    asks = [("bash", json.dumps({"command": f"pytest -k t{i}"})) for i in range(10)]
    for name, arguments in asks:
        assert categorize(name, arguments) is T
    with_arguments = [call for call in calls if call[1] is not None]
    assert len(with_arguments) == 10
    assert 1 <= _answered_from_memory(categorize, calls, asks) <= 3
    long = json.dumps({"command": "ls " + "x" * 2000})
    before = len(calls)
    assert categorize("bash", long) is R
    assert categorize("bash", long) is R
    assert calls[before:] == [("bash", long), ("bash", long)]


@pytest.mark.parametrize(
    ("command", "category"),
    [
        ('rg "retry|backoff" src', ToolCategory.READ),
        ('grep "a > b" notes.txt', ToolCategory.READ),
        ("echo done > status.txt", ToolCategory.EDIT),
        ("ls | wc -l", ToolCategory.READ),
    ],
)
def test_quoted_pipes_and_redirects_are_arguments(command: str, category: ToolCategory) -> None:
    """A | or > inside quotes is part of an argument, not a pipe or a redirect."""
    assert categorize_command(command) is category


@pytest.mark.parametrize(
    ("arguments", "category"),
    [
        ('{"command": "Get-Content src/app.py"}', ToolCategory.READ),
        ('{"command": "python -m pytest -q"}', ToolCategory.TEST),
        ('{"command": "npm install"}', ToolCategory.RUN),
    ],
)
def test_codex_shell_command_is_a_shell_tool(arguments: str, category: ToolCategory) -> None:
    """Codex's shell_command (PowerShell on Windows) is read by its command line."""
    assert categorize_tool("shell_command", arguments) is category
