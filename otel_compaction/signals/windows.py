"""Context windows of current models, and the lookup every turn uses.

Resolution order in :func:`context_window`:

1. ``Settings.model_windows`` (``OTEL_PYTHON_COMPACTION_MODEL_WINDOWS``,
   comma-separated ``model=tokens``), matched on the exact model name;
2. :data:`MODEL_WINDOWS`, matched on the normalised name (lower case, without a
   ``provider/`` or Bedrock ``[region.]vendor.`` prefix and without a trailing
   ``[...]`` tag), exactly first, then by the longest known name that the model
   extends with a dated or versioned suffix (``claude-sonnet-4-5-20250929``,
   ``gpt-4.1-mini-2025-04-14``, ``claude-sonnet-4-5@20250929``,
   ``claude-opus-4-6-v1``, ``gpt-5.4-mini-fast``);
3. ``Settings.default_window`` (``OTEL_PYTHON_COMPACTION_DEFAULT_WINDOW``), with
   one warning per unknown model name.

A suffix that is not a date or version (``claude-opus-4-9``) does not match
``claude-opus-4``: a model we do not know gets the configured default and a
warning, never a silent guess from a neighbouring family.

The table holds the total context window (input plus output) that the vendors
document, as of November 2026. Where a larger window needs an opt-in (the 1M
beta of Claude Sonnet 4 and 4.5), the table holds the default one; set the
override when you opt in.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from types import MappingProxyType

from otel_compaction._once import OncePerKey
from otel_compaction.config import Settings

logger = logging.getLogger(__name__)

_1M = 1_000_000  # Anthropic's "1M" window
_1M_OPENAI = 1_050_000  # OpenAI's documented window of the GPT-5.4 and later flagships
_GPT41 = 1_047_576

_ANTHROPIC: dict[str, int] = {
    # Claude 5 generation and Claude 4.6 to 4.8: 1M tokens natively.
    **dict.fromkeys(
        (
            "claude-fable-5-2",
            "claude-fable-5-1",
            "claude-fable-5",
            "claude-mythos-5-2",
            "claude-mythos-5-1",
            "claude-mythos-5",
            "claude-opus-5-5",
            "claude-opus-5",
            "claude-sonnet-5-5",
            "claude-sonnet-5",
            "claude-haiku-5-5",
            "claude-opus-4-8",
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
        ),
        _1M,
    ),
    # Earlier models: 200k (Sonnet 4 and 4.5 reach 1M only with a beta header).
    **dict.fromkeys(
        (
            "claude-opus-4-5",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-1",
            "claude-opus-4",
            "claude-sonnet-4",
            "claude-3-7-sonnet",
            "claude-3-5-sonnet",
            "claude-3-5-haiku",
            "claude-3-opus",
            "claude-3-haiku",
        ),
        200_000,
    ),
}

_OPENAI: dict[str, int] = {
    **dict.fromkeys(
        (
            "gpt-6.2-astra",
            "gpt-6.2-sol",
            "gpt-6.1-sol",
            "gpt-6.1-terra",
            "gpt-6-astra",
            "gpt-6-sol",
            "gpt-6-luna",
            "gpt-5.6-sol",
            "gpt-5.6-terra",
            "gpt-5.6-luna",
            "gpt-5.5",
            "gpt-5.5-pro",
            "gpt-5.4",
            "gpt-5.4-pro",
        ),
        _1M_OPENAI,
    ),
    **dict.fromkeys(
        (
            "gpt-5.4-mini",
            "gpt-5.4-nano",
            "gpt-5.2",
            "gpt-5.2-pro",
            "gpt-5.2-codex",
            "gpt-5.1",
            "gpt-5.1-codex",
            "gpt-5.1-codex-mini",
            "gpt-5.1-mini",
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-5-codex",
            "gpt-5-pro",
        ),
        400_000,
    ),
    **dict.fromkeys(
        (
            "gpt-5.3-chat-latest",
            "gpt-5.2-chat-latest",
            "gpt-5.1-chat-latest",
            "gpt-5-chat-latest",
            "gpt-4o",
            "gpt-4o-mini",
            "chatgpt-4o-latest",
            "gpt-4o-audio-preview",
            "gpt-4o-mini-audio-preview",
            "gpt-4o-search-preview",
            "gpt-4o-mini-search-preview",
            "gpt-4-turbo",
            "gpt-4-turbo-preview",
            "gpt-4-0125-preview",
            "gpt-4-1106-preview",
            "gpt-4-vision-preview",
            "o1-mini",
            "o1-preview",
        ),
        128_000,
    ),
    **dict.fromkeys(("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"), _GPT41),
    **dict.fromkeys(("o4-mini", "o3", "o3-pro", "o3-mini", "o1", "codex-mini-latest"), 200_000),
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-3.5-turbo": 16_385,
    "gpt-3.5-turbo-16k": 16_385,
    "gpt-3.5-turbo-0613": 4_096,
    "gpt-3.5-turbo-0301": 4_096,
}

MODEL_WINDOWS: Mapping[str, int] = MappingProxyType({**_ANTHROPIC, **_OPENAI})
"""Context window in tokens by (normalised) model name; see the module docstring."""

# What may follow a known name in a variant of it: a date (20250929, 2025-04-14,
# 0613), a version tag (v1, v1:0), or a serving tier (latest, fast).
_VARIANT_SUFFIX = re.compile(r"[-@](?:\d{4}|v\d|latest\b|fast\b)")
_VENDOR_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?(?:anthropic|openai)\.")
_TAG_SUFFIX = re.compile(r"\[[^\]]*\]$")
_BY_LENGTH = tuple(sorted(MODEL_WINDOWS, key=len, reverse=True))

MAX_WARNED_MODELS = 256
"""How many distinct unknown model names get their own warning."""

_warned = OncePerKey(MAX_WARNED_MODELS)


def normalize_model(model: str) -> str:
    """The model name as the table spells it: lower case, without vendor prefix or tag."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]
    name = _VENDOR_PREFIX.sub("", name)
    return _TAG_SUFFIX.sub("", name)


@functools.lru_cache(maxsize=1024)
def table_window(model: str) -> int | None:
    """The window of ``model`` from :data:`MODEL_WINDOWS`, or ``None`` when unknown."""
    name = normalize_model(model)
    exact = MODEL_WINDOWS.get(name)
    if exact is not None:
        return exact
    for known in _BY_LENGTH:
        if name.startswith(known) and _VARIANT_SUFFIX.match(name, len(known)):
            return MODEL_WINDOWS[known]
    return None


def context_window(model: str | None, settings: Settings) -> int:
    """The context window of ``model``: user override, then the table, then the default.

    An unknown model name logs one warning (for the first
    :data:`MAX_WARNED_MODELS` distinct names) and gets ``settings.default_window``.
    """
    if model is None:
        return settings.default_window
    override = settings.model_windows.get(model)  # Settings.window_for, one call less per turn
    if override is not None:
        return override
    window = table_window(model)
    if window is not None:
        return window
    _warn_unknown(model, settings.default_window)
    return settings.default_window


def _warn_unknown(model: str, default: int) -> None:
    if not _warned.claim(model):
        return
    last = _warned.full
    logger.warning(
        "unknown context window for model %r; using %d tokens. Set "
        "OTEL_PYTHON_COMPACTION_MODEL_WINDOWS=%s=<tokens> to fix the token fraction%s",
        model,
        default,
        model,
        "; further unknown models will not be reported" if last else "",
    )
