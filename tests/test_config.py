"""Settings: defaults, environment parsing, fallbacks and documentation."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from otel_compaction.config import ENV_PREFIX, Settings

DOC = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()


def test_defaults_match_the_documented_rules() -> None:
    """The defaults are numbers of the boundary and livelock incidents (docs/concepts.md)."""
    s = Settings()
    assert (s.pressure_threshold, s.transition_veto, s.hard_ceiling) == (0.65, 0.35, 0.92)
    assert s.extractive_tail_turns == 8
    assert (s.livelock_shrink_threshold, s.livelock_content_stability) == (0.20, 0.15)
    assert s.livelock_min_intervals == 4
    assert s.short_run_turns == 20
    assert s.schema_fields == ("goal", "plan", "decisions", "open_errors", "next_action")


def test_environment_values_are_parsed() -> None:
    """Numbers, lists and maps are read from OTEL_PYTHON_COMPACTION_* variables."""
    env = {
        ENV_PREFIX + "PRESSURE_THRESHOLD": "0.7",
        ENV_PREFIX + "MODEL_WINDOWS": "my-model=32000, other=1000",
        ENV_PREFIX + "PHASES": "read,write",
        ENV_PREFIX + "TOOL_CATEGORIES": "my_grep=read",
    }
    s = Settings.from_env(env)
    assert s.pressure_threshold == 0.7
    assert s.model_windows == {"my-model": 32000, "other": 1000}
    assert s.phases == ("read", "write")
    assert s.tool_categories == {"my_grep": "read"}


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("PRESSURE_THRESHOLD", "lots"),
        ("HARD_CEILING", "1.5"),
        ("MODEL_WINDOWS", "no-equals-sign"),
        ("MODEL_WINDOWS", "m=notanumber"),
        ("PHASES", "a,a"),
    ],
)
def test_bad_environment_value_warns_and_falls_back(
    name: str, raw: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A bad value logs a warning naming the variable and keeps the default."""
    with caplog.at_level(logging.WARNING, logger="otel_compaction.config"):
        s = Settings.from_env({ENV_PREFIX + name: raw})
    assert getattr(s, name.lower()) == getattr(Settings(), name.lower())
    assert ENV_PREFIX + name in caplog.text


def test_capture_content_follows_the_genai_variable() -> None:
    """Content capture is off by default and on for SPAN_ONLY / SPAN_AND_EVENT."""
    assert Settings.from_env({}).capture_content is False
    var = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    assert Settings.from_env({var: "NO_CONTENT"}).capture_content is False
    assert Settings.from_env({var: "EVENT_ONLY"}).capture_content is False
    assert Settings.from_env({var: "SPAN_ONLY"}).capture_content is True
    assert Settings.from_env({var: "span_and_event"}).capture_content is True


def test_overrides_in_code_are_strict() -> None:
    """A bad value passed in code raises instead of falling back."""
    with pytest.raises(ValidationError):
        Settings.from_env({}, transition_veto=2.0)
    with pytest.raises(ValidationError):
        Settings.from_env({}, no_such_setting=1)


def test_settings_are_frozen() -> None:
    """Settings cannot be changed after construction."""
    with pytest.raises(ValidationError):
        Settings().pressure_threshold = 0.1  # type: ignore[misc]


def test_every_field_is_documented() -> None:
    """docs/configuration.md names every field and its environment variable."""
    for name in Settings.model_fields:
        assert f"`{name}`" in DOC, name
        if name != "capture_content":
            assert f"`{ENV_PREFIX}{name.upper()}`" in DOC, name
