"""``analyze`` never hangs, crashes or runs out of memory on a file,
and counts a repeated record once.

Each run is a subprocess with a timeout, so an input that hangs fails its test
instead of stopping the suite.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SESSION = "hostile-session"
TIMEOUT = 60
MEMORY = 4 << 30  # address space of the analyze process: a runaway read fails, not the host


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _record(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "sessionId": SESSION,
        "uuid": f"u-{n}",
        "timestamp": f"2026-11-12T10:{n // 60:02d}:{n % 60:02d}.000Z",
        **fields,
    }


def _call(n: int, context: object, **usage: Any) -> dict[str, Any]:
    figures = {"input_tokens": context, "output_tokens": 10, **usage}
    message = {"id": f"msg-{n}", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": "ok"}], "usage": figures}  # fmt: skip
    return _record("assistant", n, message=message)


def _user(n: int, content: Any) -> dict[str, Any]:
    return _record("user", n, message={"role": "user", "content": content})


def _boundary(n: int, **fields: Any) -> dict[str, Any]:
    return _record("system", n, subtype="compact_boundary", **fields)


def _summary(n: int, text: str) -> dict[str, Any]:
    return _record("user", n, isCompactSummary=True, message={"role": "user", "content": text})


def _write(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _good(path: Path) -> Path:
    """A healthy transcript: the file whose report must survive its hostile neighbours."""
    records: list[Any] = [_user(1, "fix the bug")]
    records += [_call(n, 1000 * n) for n in range(2, 8)]
    return _write(path, [{**r, "sessionId": "good-session"} for r in records])


def _analyze(*paths: Path) -> tuple[int, dict[str, Any], str]:
    """Run ``otel-compaction analyze --format json``; fails (not hangs) after TIMEOUT s."""
    command = [sys.executable, "-m", "otel_compaction", "analyze", "--format", "json"]
    try:
        done = subprocess.run(
            [*command, *map(str, paths)], capture_output=True, text=True, timeout=TIMEOUT,
            preexec_fn=_bounded,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"analyze did not finish within {TIMEOUT} s")
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def _ids(report: dict[str, Any]) -> set[str]:
    return {c["id"] for c in report.get("conversations", [])}


# ------------------------------ lines and files that could hang or crash it


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
def test_a_non_finite_timestamp_is_a_skipped_line(tmp_path: Path, constant: str) -> None:
    """``"timestamp": Infinity`` (JSON has no such number) is skipped with its line; no hang."""
    line = json.dumps(_call(3, 3000)).replace('"2026-11-12T10:00:03.000Z"', constant)
    bad = _write(tmp_path / "bad.jsonl", [_user(1, "go"), _call(2, 2000), line])
    good = _good(tmp_path / "good.jsonl")
    code, report, err = _analyze(bad, good)
    assert "good-session" in _ids(report)
    assert f"{bad}:3: " in err
    assert constant.lstrip("-") in err
    assert code == 0


@pytest.mark.parametrize("last", [False, True], ids=["mid_file", "last_record"])
def test_a_superscript_token_count_is_a_skipped_line(tmp_path: Path, last: bool) -> None:
    """``"input_tokens": "¹²"`` (isdigit but no int) skips its call with the line and reason."""
    records = [_user(1, "go"), _call(2, 2000), _call(3, "¹²")]
    if not last:
        records.append(_call(4, 4000))
    bad = _write(tmp_path / "bad.jsonl", records)
    good = _good(tmp_path / "good.jsonl")
    code, report, err = _analyze(bad, good)
    assert {"good-session", SESSION} <= _ids(report)
    assert f"{bad}:3: " in err
    assert "input_tokens" in err
    assert code == 0


def _nested_tool_results(depth: int) -> Any:
    block: Any = "deep"
    for _ in range(depth):
        block = {"type": "tool_result", "tool_use_id": "t", "content": [block]}
    return [block]


def _nested_lists(depth: int) -> Any:
    content: Any = "deep"
    for _ in range(depth):
        content = [content]
    return content


@pytest.mark.parametrize(
    "content", [_nested_tool_results(330), _nested_lists(950)], ids=["tool_results", "lists"]
)
def test_deeply_nested_content_is_read_or_skipped_never_a_crash(
    tmp_path: Path, content: Any
) -> None:
    """330 nested tool_result blocks or 950 nested lists end no run: the other files report."""
    bad = _write(tmp_path / "bad.jsonl", [_user(1, content), _call(2, 2000), _call(3, 3000)])
    good = _good(tmp_path / "good.jsonl")
    code, report, err = _analyze(bad, good)
    assert {"good-session", SESSION} <= _ids(report)
    assert code == 0, err


def test_far_deeper_nesting_is_a_skipped_line_with_its_reason(tmp_path: Path) -> None:
    """Nesting beyond what JSON is read to (100,000 lists) is a skipped line, not a crash."""
    deep = "[" * 100_000 + "]" * 100_000
    line = json.dumps({"type": "user", "sessionId": SESSION, "uuid": "u-1"})[:-1]
    line += f', "message": {{"content": {deep}}}}}'
    bad = _write(tmp_path / "bad.jsonl", [line, _call(2, 2000)])
    code, report, err = _analyze(bad, _good(tmp_path / "good.jsonl"))
    assert f"{bad}:1: " in err
    assert "nested too deeply" in err
    assert "good-session" in _ids(report)
    assert code == 0


def test_a_directory_with_a_dev_zero_symlink_and_a_fifo_reads_only_regular_files(
    tmp_path: Path,
) -> None:
    """A ``.jsonl`` symlink to /dev/zero and a FIFO are skipped files with a reason, not a hang."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    _good(folder / "good.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.jsonl")
    code, report, err = _analyze(folder)
    assert "good-session" in _ids(report)
    for name in ("zero.jsonl", "pipe.jsonl"):
        assert f"{folder / name}: " in err
    assert "not a regular file" in err
    assert code == 1  # some input could not be read


def test_a_line_longer_than_the_bound_is_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    """A line past the line-length bound is skipped with its number; later lines are read."""
    from otel_compaction.transcripts.lines import MAX_LINE_BYTES

    huge = '{"type": "user", "pad": "' + "x" * (MAX_LINE_BYTES + 10) + '"}'
    bad = _write(tmp_path / "bad.jsonl", [_user(1, "go"), huge, _call(3, 3000)])
    code, report, err = _analyze(bad)
    assert f"{bad}:2: " in err
    assert "longer than" in err
    assert SESSION in _ids(report)
    assert code == 0


# --------------------------------------------------------- repeated records


def _cycle(start: int, tokens: int) -> list[Any]:
    return [_call(start, tokens), _call(start + 1, tokens + 40_000)]


def test_the_same_boundary_record_three_times_is_one_compaction(tmp_path: Path) -> None:
    """One compact_boundary (one uuid) repeated three times: one compaction, generation 0."""
    meta = {"trigger": "auto", "preTokens": 150_000}
    boundary = _boundary(10, compactMetadata=meta)
    records = [_user(1, "go"), *_cycle(2, 100_000), boundary, boundary, boundary,
               _summary(11, "summary of the work so far"), *_cycle(12, 30_000)]  # fmt: skip
    code, report, _ = _analyze(_write(tmp_path / "t.jsonl", records))
    [conversation] = report["conversations"]
    assert (conversation["compactions"], conversation["max_generation"]) == (1, 0)
    assert code == 0


def test_boundary_records_missing_their_fields_count_once_and_say_what_is_missing(
    tmp_path: Path,
) -> None:
    """Six bare boundary records (no uuid, no metadata) are one compaction and named on stderr."""
    bare = {"type": "system", "subtype": "compact_boundary", "sessionId": SESSION}
    records = [_user(1, "go"), *_cycle(2, 100_000), *[bare] * 6, *_cycle(12, 30_000)]
    path = _write(tmp_path / "t.jsonl", records)
    code, report, err = _analyze(path)
    [conversation] = report["conversations"]
    assert conversation["compactions"] == 1
    assert [f for f in report["findings"] if f["kind"] == "reexpansion_livelock"] == []
    assert f"{path}:4: " in err
    assert "compactMetadata" in err
    assert err.count("compact_boundary") == 1
    assert code == 0
