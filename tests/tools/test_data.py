"""The kept real sessions and captures: their FACTS.json and README stay true of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools.session_facts import file_facts

DATA = Path(__file__).resolve().parents[1] / "data"
FOLDERS = ("real-sessions", "otel-captures")


@pytest.mark.parametrize("folder", FOLDERS)
def test_facts_match_the_files(folder: str) -> None:
    """FACTS.json lists every .jsonl of the folder with the facts counted from it."""
    recorded = json.loads((DATA / folder / "FACTS.json").read_text("utf-8"))["files"]
    files = sorted(p.name for p in (DATA / folder).glob("*.jsonl"))
    assert sorted(recorded) == files
    for name in files:
        assert recorded[name] == file_facts(DATA / folder / name), name


@pytest.mark.parametrize("folder", FOLDERS)
def test_readme_names_every_file_with_its_source(folder: str) -> None:
    """Each kept file has a row in its folder's README that names a repository commit."""
    readme = (DATA / folder / "README.md").read_text("utf-8")
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in readme.splitlines()
        if line.startswith("| `")
    }
    for path in (DATA / folder).glob("*.jsonl"):
        assert path.name in rows, path.name
        assert " @ " in rows[path.name], path.name


def test_captures_carry_no_identity_attributes() -> None:
    """No user email, account or organization id is left in the OTel captures."""
    for path in (DATA / "otel-captures").glob("*.jsonl"):
        text = path.read_text("utf-8")
        for key in ("user.email", "user.account_uuid", "user.account_id", "organization.id"):
            assert f'"{key}"' not in text, (path.name, key)
