"""The value rules of the skeletonizer: what a string becomes, by the key it sits under.

Prose keys get same-length filler, id and enum keys keep their value, place keys a
short hash; a string under any other key is kept when it reads as an identifier, made
filler when it has spaces and hashed otherwise. Tool inputs are hashed field by field,
except shell commands (a skeleton that keeps the tool category) and the few enum fields
the tools have.
"""

from __future__ import annotations

import json
import re
from typing import Any

from otel_compaction.signals.tools import SHELL_TOOLS
from tests.tools.skeleton_text import (
    filler,
    is_identifier,
    short_hash,
    skeleton_command,
    words,
)

Json = Any

# Keys whose string values are prose: same-length filler.
PROSE_KEYS = words(
    "text thinking content summary message description prompt output "
    "activeForm instructions user_instructions developer_instructions "
    "last_agent_message stdout stderr aggregated_output formatted_output reason"
)
# Keys whose string values are kept as they are (ids, enums, names, times).
KEEP_KEYS = words(
    "type subtype uuid parentUuid logicalParentUuid leafUuid sessionId timestamp id "
    "tool_use_id role model stop_reason stop_sequence name requestId level trigger "
    "agentId version userType service_tier messageId call_id status output_mode "
    "subagent_type operation originator cli_version source model_provider effort "
    "approval_policy sandbox_policy mode entrypoint permissionMode inference_geo "
    "promptId toolUseID parentToolUseID hookEvent hookName bash_command endpoint"
)
# Keys whose string values identify a place or a thing: a short hash.
HASH_KEYS = words(
    "cwd gitBranch slug signature encrypted_content data url path commit_hash repository_url"
)
SHELL_KEYS = ("command", "cmd", "full_command")


def skeleton_string(key: str | None, value: str) -> str:
    """One string value, by the key it sits under."""
    if key in KEEP_KEYS:
        return value
    if key in HASH_KEYS:
        return short_hash(value)
    if key in PROSE_KEYS:
        return filler(value)
    if is_identifier(value):
        return value
    return filler(value) if " " in value else short_hash(value)


def walk(value: Json, key: str | None = None) -> Json:
    """A JSON value with every string replaced by the rule of its key."""
    if isinstance(value, str):
        return skeleton_string(key, value)
    if isinstance(value, list):
        return [walk(item, key) for item in value]
    if isinstance(value, dict):
        return {object_key(k): walk(v, k) for k, v in value.items()}
    return value


def object_key(key: str) -> str:
    """Object keys stay, unless they are data (file paths as keys of a snapshot)."""
    return key if is_identifier(key) else short_hash(key)


def tool_input(name: str, value: Json) -> Json:
    """A tool call's input: shell commands as skeletons, enums kept, other strings hashed."""
    if isinstance(value, dict):
        return {object_key(k): _tool_field(name, k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [tool_input(name, item) for item in value]
    if isinstance(value, str):
        return short_hash(value)
    return value


def _tool_field(name: str, key: str, value: Json) -> Json:
    if isinstance(value, str):
        if key in SHELL_KEYS and is_shell_tool(name):
            return skeleton_command(value)
        if key in KEEP_KEYS and is_identifier(value):
            return value
        if key in ("description", "content", "activeForm", "prompt"):
            return filler(value)
        return short_hash(value)
    if isinstance(value, list) and key in SHELL_KEYS:
        return _argv(value)
    if isinstance(value, dict | list):
        return tool_input(name, value)
    return value


_SHELLISH = re.compile(r"shell|bash|exec|command|terminal|powershell|cmd", re.IGNORECASE)


def is_shell_tool(name: str) -> bool:
    """Whether ``name`` runs command lines: the engine's shell tools, and any tool whose
    name says so (Codex ``shell_command``, Claude Code ``PowerShell``), so that a later
    engine can still tell a test run from a read in the kept data."""
    return name.lower() in SHELL_TOOLS or bool(_SHELLISH.search(name))


def _argv(argv: list[Json]) -> list[Json]:
    """An argv list (``["bash", "-lc", "pytest -q"]``): the script as a skeleton."""
    out: list[Json] = []
    for i, part in enumerate(argv):
        if not isinstance(part, str):
            out.append(part)
        elif i == 0 or part.startswith("-"):
            base = part.rsplit("/", 1)[-1]
            out.append(base if is_identifier(base) else short_hash(part))
        else:
            out.append(skeleton_command(part))
    return out


def arguments_text(name: str, text: str) -> str:
    """A tool call's arguments as JSON text (Codex ``function_call``, OTel attributes)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        if is_shell_tool(name):
            return skeleton_command(text)
        return filler(text)
    return json.dumps(tool_input(name, parsed), ensure_ascii=False, separators=(",", ":"))
