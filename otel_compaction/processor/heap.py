"""Freed heap memory handed back to the operating system.

A long-running processor frees most of what it allocates: every request's
protobuf, its write-ahead bytes, the turns' transient objects. CPython returns
its own emptied arenas, but the C allocator (glibc ``malloc``) keeps the pages
of freed blocks below the top of its heap for reuse, so the resident set
carries them as if they were state (docs/benchmarks.md, memory per idle
conversation: the resident set before and after this trim).
``malloc_trim(0)`` gives those pages back (whole free pages anywhere in the heap,
with ``madvise``); the pipeline calls ``release`` every
``processing.trim_memory_seconds`` (0: never). ctypes releases the GIL for the
call, so the receivers keep serving; malloc itself waits for it.

Where the C library has no ``malloc_trim`` (musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)


def _trimmer() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]  # type: ignore[attr-defined]
    trim.restype = ctypes.c_int  # type: ignore[attr-defined]
    return trim


_TRIM = _trimmer()


def can_release() -> bool:
    """Whether this C library can hand freed memory back (glibc)."""
    return _TRIM is not None


def release() -> bool:
    """Hand the C heap's free pages back to the operating system; True if any went."""
    if _TRIM is None:
        return False
    try:
        return bool(_TRIM(0))
    except Exception:  # never let housekeeping fail a step
        logger.debug("malloc_trim failed", exc_info=True)
        return False
