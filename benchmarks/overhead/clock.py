"""A clock inside the anthropic SDK call, to tell an instrumentation's own time from the SDK's.

Installed before any instrumentation, it replaces ``Messages.create`` and the SDK stream's
``__iter__`` / ``__next__`` with thin timing shims, so an instrumentation that wraps the public
method wraps the shim. Per call, *own time* = call time - time inside the shims: what the
instrumentation spends before, after and between the SDK's steps, measured in one process with
no comparison across processes (whose SDK cost varies by a few percent at 2,000 messages). The
uninstrumented configuration's own time is the shims' overhead, subtracted in the report.

It is exact only for instrumentations whose every hook sits outside the SDK call (ours in (e),
OpenLLMetry, the official packages in this use); the SDK's own span and OpenInference also work
inside it, so the report gives own times for the former only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any


class InnerClock:
    """Accumulates the nanoseconds spent inside the SDK's create call and stream steps.

    ``clock`` is the clock the shims read: wall time (``time.perf_counter_ns``) for the
    benchmark, the thread's CPU time for ``overhead/stages.py``.
    """

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.inner_ns = 0
        self.clock = clock

    def install(self) -> None:
        """Put the shims in place (anthropic only; before instrumenting)."""
        from anthropic._streaming import Stream
        from anthropic.resources.messages import Messages

        Messages.create = self._timed(Messages.create)  # type: ignore[method-assign]
        Stream.__next__ = self._timed(Stream.__next__)  # type: ignore[method-assign]
        Stream.__iter__ = self._timed_iter(Stream.__iter__)  # type: ignore[method-assign]

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = self.clock

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.inner_ns += clock() - start

        timed.__name__, timed.__doc__ = fn.__name__, fn.__doc__
        return timed

    def _timed_iter(self, fn: Callable[[Any], Iterator[Any]]) -> Callable[[Any], Iterator[Any]]:
        clock = self.clock

        def timed_iter(stream: Any) -> Iterator[Any]:
            inner = fn(stream)
            while True:
                start = clock()
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    self.inner_ns += clock() - start
                yield item

        return timed_iter
