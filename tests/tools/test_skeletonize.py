"""The skeletonizer: prose replaced, lengths, structure and metadata kept, deterministic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_compaction.signals.tools import categorize_command
from tests.tools.skeleton_text import keyed, skeleton_command
from tests.tools.skeletonize import main, skeletonize

PROSE = "the failing assertion ties to the stale fixture in conftest"
SUMMARY = (
    "This session is being continued from a previous conversation.\n"
    "1. Primary Request and Intent:\n   fix the stale fixture for Alice\n"
    "7. Pending Tasks:\n   - rerun the suite"
)


def _claude_session() -> list[dict[str, Any]]:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 120, "cache_read_input_tokens": 9}
    return [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s-1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/home/alice/project",
            "message": {"role": "user", "content": PROSE},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s-1",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-x",
                "usage": usage,
                "content": [
                    {"type": "text", "text": "I will run the tests now"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {
                            "command": "cd /home/alice/project && uv run pytest -q",
                            "description": "Run the tests",
                        },
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "Read",
                        "input": {"file_path": "/home/alice/project/conftest.py", "limit": 40},
                    },
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "sessionId": "s-1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "toolUseResult": {"stdout": PROSE, "interrupted": False},
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": PROSE}],
            },
        },
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "c1",
            "parentUuid": None,
            "logicalParentUuid": "u2",
            "sessionId": "s-1",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 150803, "postTokens": 4100},
        },
        {
            "type": "user",
            "uuid": "u3",
            "parentUuid": "c1",
            "sessionId": "s-1",
            "isCompactSummary": True,
            "timestamp": "2026-01-01T00:00:04.000Z",
            "message": {"role": "user", "content": SUMMARY},
        },
    ]


def _run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    source = "".join(json.dumps(r) + "\n" for r in records).encode()
    return [json.loads(line) for line in skeletonize(source).splitlines()]


def test_prose_is_replaced_and_its_length_kept() -> None:
    """User text, tool results and assistant text become filler of the same length."""
    out = _run(_claude_session())
    assert out[0]["message"]["content"] != PROSE
    assert len(out[0]["message"]["content"]) == len(PROSE)
    result = out[2]["message"]["content"][0]["content"]
    assert len(result) == len(PROSE)
    assert "stale" not in result
    text = out[1]["message"]["content"][0]["text"]
    assert len(text) == len("I will run the tests now")
    assert "tests" not in text
    assert PROSE not in json.dumps(out)
    assert "alice" not in json.dumps(out).lower()


def test_structure_usage_ids_timestamps_and_compaction_metadata_are_kept() -> None:
    """Record types, ids, timestamps, usage, model and tool names and compactMetadata stay."""
    records = _claude_session()
    out = _run(records)
    for before, after in zip(records, out, strict=True):
        assert after.keys() == before.keys()
        for key in ("type", "uuid", "parentUuid", "sessionId", "timestamp"):
            assert after[key] == before[key]
    assert out[1]["message"]["usage"] == records[1]["message"]["usage"]
    assert out[1]["message"]["model"] == "claude-x"
    assert out[1]["message"]["id"] == "msg_1"
    assert [b.get("name") for b in out[1]["message"]["content"]] == [None, "Bash", "Read"]
    assert out[3]["compactMetadata"] == records[3]["compactMetadata"]
    assert out[4]["isCompactSummary"] is True
    assert out[1]["message"]["content"][2]["input"]["limit"] == 40


def test_summary_keeps_template_headings_only() -> None:
    """A compaction summary keeps Claude Code's section headings; its content is filler."""
    summary = _run(_claude_session())[4]["message"]["content"]
    lines = summary.split("\n")
    assert len(summary) == len(SUMMARY)
    assert "1. Primary Request and Intent:" in lines
    assert "7. Pending Tasks:" in lines
    assert "Alice" not in summary
    assert "rerun" not in summary


def test_tool_inputs_are_hashed_and_commands_keep_their_category() -> None:
    """Paths become equal hashes for equal values; a Bash command keeps its test runner."""
    out = _run(_claude_session())
    bash, read = out[1]["message"]["content"][1:]
    assert bash["input"]["command"].endswith("uv run pytest -q")
    assert categorize_command(bash["input"]["command"]) == "test"
    assert read["input"]["file_path"].startswith("h:")
    assert out[2]["toolUseResult"]["stdout"].startswith("h:")
    assert out[2]["toolUseResult"]["interrupted"] is False


def test_output_is_deterministic_and_keyed_by_the_input() -> None:
    """The same file gives the same bytes; another file hashes the same path differently."""
    source = "".join(json.dumps(r) + "\n" for r in _claude_session()).encode()
    assert skeletonize(source) == skeletonize(source)
    other = source.replace(b"Run the tests", b"Run the suite")
    path_hash = json.loads(skeletonize(source).splitlines()[1])["message"]["content"][2]
    other_hash = json.loads(skeletonize(other).splitlines()[1])["message"]["content"][2]
    assert path_hash["input"]["file_path"] != other_hash["input"]["file_path"]


def test_equal_words_give_equal_filler_so_containment_survives() -> None:
    """A text repeated inside a later text is still contained in it after filler."""
    first = "goal fix the stale fixture then rerun the suite"
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": "s",
            "message": {"role": "user", "content": first},
        },
        {
            "type": "user",
            "uuid": "u2",
            "sessionId": "s",
            "message": {"role": "user", "content": "earlier: " + first + " and more"},
        },
    ]
    out = _run(records)
    assert out[0]["message"]["content"] in out[1]["message"]["content"]


@pytest.mark.parametrize(
    "command",
    [
        "uv run pytest tests/unit -q",
        "cd /srv/app && npm test -- --watch=false",
        "sed -i 's/a/b/' src/x.py",
        "cat > notes.txt <<'EOF'\nprivate line\nEOF",
        "git status --short && git diff HEAD~1",
        'rg -n "Save|Load" src -g "*.lua"',
        "docker compose up -d",
        "echo 'unbalanced",
    ],
)
def test_command_skeleton_has_the_original_category(command: str) -> None:
    """Every skeleton falls into the tool category of the command it replaces."""
    with keyed(b"k"):
        skeleton = skeleton_command(command)
    assert categorize_command(skeleton) == categorize_command(command)
    assert "private" not in skeleton
    assert "/srv/app" not in skeleton


def test_codex_rollout_keeps_token_counts_and_compaction() -> None:
    """A rollout keeps token_count numbers, call names and the compacted record's shape."""
    records = [
        {
            "timestamp": "t0",
            "type": "session_meta",
            "payload": {
                "id": "019f",
                "cwd": "/home/bob/x",
                "cli_version": "0.1",
                "originator": "codex_cli_rs",
            },
        },
        {
            "timestamp": "t1",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell_command",
                "call_id": "call_1",
                "arguments": json.dumps({"command": "pytest -q", "workdir": "/home/bob/x"}),
            },
        },
        {
            "timestamp": "t2",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "last_token_usage": {"input_tokens": 23179},
                    "model_context_window": 258400,
                },
            },
        },
        {
            "timestamp": "t3",
            "type": "compacted",
            "payload": {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "bob's secret task"}],
                    }
                ],
            },
        },
        {"timestamp": "t4", "type": "event_msg", "payload": {"type": "context_compacted"}},
    ]
    out = _run(records)
    assert out[0]["payload"]["id"] == "019f"
    assert out[0]["payload"]["cwd"].startswith("h:")
    arguments = json.loads(out[1]["payload"]["arguments"])
    assert out[1]["payload"]["name"] == "shell_command"
    assert arguments["command"] == "pytest -q"
    assert out[2] == records[2]
    history = out[3]["payload"]["replacement_history"][0]["content"][0]["text"]
    assert len(history) == len("bob's secret task")
    assert "secret" not in history
    assert out[4] == records[4]


def test_otlp_logs_drop_identity_and_keep_event_attributes() -> None:
    """Identity attributes go, event names, numbers and compaction attributes stay."""

    def attr(key: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, "value": value}

    record = {
        "timeUnixNano": "1",
        "body": {"stringValue": "claude_code.compaction"},
        "attributes": [
            attr("user.email", {"stringValue": "alice@example.com"}),
            attr("session.id", {"stringValue": "45aa0643-b108-4d50-ab19-45fc6686b1a2"}),
            attr("pre_tokens", {"stringValue": "34181"}),
            attr("error", {"stringValue": "too_few_groups"}),
            attr("input_tokens", {"intValue": 2}),
            attr("prompt", {"stringValue": "fix the bug for alice"}),
        ],
    }
    request = {
        "body_json": {
            "resourceLogs": [
                {"resource": {"attributes": []}, "scopeLogs": [{"logRecords": [record]}]}
            ]
        }
    }
    out = _run([request])[0]
    kept = out["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    by_key = {a["key"]: a["value"] for a in kept["attributes"]}
    assert "user.email" not in by_key
    assert by_key["pre_tokens"] == {"stringValue": "34181"}
    assert by_key["error"] == {"stringValue": "too_few_groups"}
    assert by_key["input_tokens"] == {"intValue": 2}
    assert "alice" not in by_key["prompt"]["stringValue"]
    assert kept["body"] == record["body"]


def test_bad_line_is_named_and_command_line_fails(tmp_path: Any) -> None:
    """A line that is not JSON is reported with its number and the tool exits 1."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"type": "user"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        skeletonize(source.read_bytes())
    assert main([str(source), str(tmp_path / "out.jsonl")]) == 1


def test_max_bytes_cuts_at_a_record_boundary() -> None:
    """--max-bytes keeps whole records only, none past the limit."""
    source = "".join(json.dumps(r) + "\n" for r in _claude_session()).encode()
    full = skeletonize(source)
    cut = skeletonize(source, max_bytes=len(full.encode()) - 1)
    assert full.startswith(cut)
    assert cut.endswith("\n")
    assert len(cut.splitlines()) == len(full.splitlines()) - 1
