"""Commands whose extra is missing say, in one line, the exact pip install that brings it."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from otel_compaction.cli import SUBCOMMANDS, main
from otel_compaction.cli import _extras as extras


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in modules else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    ("argv", "extra", "missing"),
    [
        (["processor"], "processor", "yaml"),
        (["processor", "--check"], "processor", "prometheus_client"),
        (["demo", "--out", "unused"], "demo", "openai"),
        (["analyze", "--format", "html", "unused.jsonl"], "report", "plotly"),
    ],
)
def test_missing_extra_is_named_with_its_pip_install(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    extra: str,
    missing: str,
) -> None:
    """Exit 2 and one stderr line: what is missing and `pip install 'otel-compaction[extra]'`."""
    _without(monkeypatch, missing)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"needs the {extra} extra (missing: {missing})" in err
    assert f"pip install 'otel-compaction[{extra}]'" in err


def test_every_extra_named_exists_in_pyproject() -> None:
    """The extras the commands name are the distribution's, with the modules they bring."""
    from importlib.metadata import metadata

    provided = set(metadata("otel-compaction").get_all("Provides-Extra") or [])
    for extra in (extras.PROCESSOR, extras.REPORT, extras.DEMO):
        assert extra.name in provided


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_shows_every_option_and_the_extra(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`otel-compaction COMMAND --help` lists options beyond -h, and the extra it needs."""
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.count("--") > 2
    extra = SUBCOMMANDS[command][2]
    if extra is not None:
        assert extra.install in " ".join(out.split())
