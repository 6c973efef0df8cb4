"""What a framework hook tells the LiteLLM call it is about to make (aider's, today).

A hook runs in the caller's context just before the framework calls LiteLLM; the
call's pre-call callback, in the same context, takes the hint (once).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass

from otel_compaction.instrument.litellm._read import Ephemeral

__all__ = ["RequestHint", "note_request", "take_hint"]


@dataclass(frozen=True, slots=True)
class RequestHint:
    """What a framework hook knows of the LiteLLM call it is about to make.

    Args:
        ephemeral: what the request holds for this once (see ``Ephemeral``).
        conversation: the conversation the framework's agent continues (an aider coder
            made from another one), or None to infer it.
        remember: called with the conversation the call was placed in.
    """

    ephemeral: Ephemeral | None = None
    conversation: str | None = None
    remember: Callable[[str], None] | None = None


_HINT: contextvars.ContextVar[RequestHint | None] = contextvars.ContextVar(
    "otel_compaction_litellm_hint", default=None
)


def note_request(hint: RequestHint) -> None:
    """Tell the next LiteLLM call in this context what the framework knows of it (a
    framework hook calls it just before the framework calls LiteLLM)."""
    _HINT.set(hint)


def take_hint() -> RequestHint:
    """The hint noted for this call (then forgotten), or an empty one."""
    hint = _HINT.get()
    if hint is None:
        return _NO_HINT
    _HINT.set(None)
    return hint


_NO_HINT = RequestHint()
