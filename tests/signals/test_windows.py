"""The model-window table, its lookup rules and the env overrides."""

from __future__ import annotations

import gc
import logging
import tracemalloc

import pytest

from otel_compaction._once import OncePerKey
from otel_compaction.config import Settings
from otel_compaction.signals import MODEL_WINDOWS, context_window, normalize_model
from otel_compaction.signals import windows as windows_module
from otel_compaction.signals.windows import table_window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("claude-haiku-4-5", 200_000),
        ("claude-opus-4-6", 1_000_000),
        ("claude-sonnet-5-5", 1_000_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-5", 400_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5.5", 1_050_000),
    ],
)
def test_table_knows_current_models(model: str, window: int) -> None:
    """Current Anthropic and OpenAI models resolve to their documented window."""
    assert context_window(model, Settings()) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("claude-opus-4-20250514", 200_000),
        ("claude-opus-4-1-20250805", 200_000),
        ("gpt-4.1-mini-2025-04-14", 1_047_576),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-5-nano-2025-08-07", 400_000),
        ("gpt-5.4-mini-2026-03-17", 400_000),
        ("o3-mini-2025-01-31", 200_000),
        ("gpt-4-0613", 8_192),
    ],
)
def test_dated_variants_match_the_longest_known_name(model: str, window: int) -> None:
    """A dated variant gets the window of the longest known name it extends."""
    assert context_window(model, Settings()) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("anthropic/claude-opus-4-6", 1_000_000),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
        ("claude-sonnet-4-5@20250929", 200_000),
        ("openai/gpt-5.4", 1_050_000),
        ("GPT-4O", 128_000),
        ("claude-opus-4-6[1m]", 1_000_000),
    ],
)
def test_provider_spellings_are_normalised(model: str, window: int) -> None:
    """Gateway prefixes, Bedrock ids, Vertex @dates, case and [tags] do not hide a model."""
    assert context_window(model, Settings()) == window


def test_normalize_model_strips_prefixes_and_tags() -> None:
    """normalize_model lower-cases and drops the vendor prefix and the trailing tag."""
    assert normalize_model(" Global.Anthropic.Claude-Opus-4-6[1M] ") == "claude-opus-4-6"


def test_unrelated_suffix_is_not_a_variant(caplog: pytest.LogCaptureFixture) -> None:
    """A newer sibling (claude-opus-4-99) is unknown, not silently an Opus 4."""
    settings = Settings(default_window=123_456)
    with caplog.at_level(logging.WARNING, logger=windows_module.__name__):
        assert context_window("claude-opus-4-99", settings) == 123_456
    assert "claude-opus-4-99" in caplog.text


def test_override_wins_over_table() -> None:
    """Settings.model_windows (exact names) overrides the table and adds models."""
    settings = Settings(model_windows={"claude-sonnet-4-5": 1_000_000, "my-local-llm": 32_768})
    assert context_window("claude-sonnet-4-5", settings) == 1_000_000
    assert context_window("my-local-llm", settings) == 32_768
    assert context_window("claude-sonnet-4-5-20250929", settings) == 200_000


def test_env_overrides_reach_the_lookup() -> None:
    """OTEL_PYTHON_COMPACTION_MODEL_WINDOWS and _DEFAULT_WINDOW drive context_window."""
    settings = Settings.from_env(
        {
            "OTEL_PYTHON_COMPACTION_MODEL_WINDOWS": "gpt-4o=64000, in-house-7b=8192",
            "OTEL_PYTHON_COMPACTION_DEFAULT_WINDOW": "50000",
        }
    )
    assert context_window("gpt-4o", settings) == 64_000
    assert context_window("in-house-7b", settings) == 8_192
    assert context_window("env-unknown-model-x", settings) == 50_000


def test_unknown_model_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    """An unknown model gets the default window and one warning, however often it is seen."""
    settings = Settings()
    with caplog.at_level(logging.WARNING, logger=windows_module.__name__):
        for _ in range(5):
            assert context_window("warn-once-model-a", settings) == settings.default_window
    assert len([r for r in caplog.records if "warn-once-model-a" in r.getMessage()]) == 1


def test_missing_model_gets_default_silently(caplog: pytest.LogCaptureFixture) -> None:
    """No model name means the default window, without a warning."""
    with caplog.at_level(logging.WARNING, logger=windows_module.__name__):
        assert context_window(None, Settings(default_window=77_000)) == 77_000
    assert not caplog.records


def test_warned_names_are_bounded(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_WARNED_MODELS distinct unknown names, no more warnings and no more memory:
    10,000 unknown names leave nothing behind once the name table's own cache is emptied."""
    monkeypatch.setattr(windows_module, "_warned", OncePerKey(3))  # a fresh process's, bound 3
    settings = Settings()
    with caplog.at_level(logging.WARNING, logger=windows_module.__name__):
        for i in range(3):
            context_window(f"bounded-unknown-{i}", settings)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(3, 10_003):
                context_window(f"bounded-unknown-{i}", settings)
            table_window.cache_clear()
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert len(caplog.records) == 3
    assert "further unknown models will not be reported" in caplog.records[-1].getMessage()
    assert kept < 16_384  # remembering the names would take over half a megabyte


def test_table_is_read_only_and_positive() -> None:
    """MODEL_WINDOWS cannot be mutated and holds only lower-case names with positive windows."""
    with pytest.raises(TypeError):
        MODEL_WINDOWS["x"] = 1  # type: ignore[index]
    assert all(name == name.lower() and window > 0 for name, window in MODEL_WINDOWS.items())
