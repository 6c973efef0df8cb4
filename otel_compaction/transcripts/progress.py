"""Progress of a long read, on stderr: bytes read of the total, throttled.

Shown only when asked for (``--progress``) or when stderr is a terminal, so
pipes and CI logs stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_MIN_INTERVAL = 0.25  # seconds between two redraws


class Progress:
    """A one-line progress display: ``label: 42% (12.3 of 29.0 MB) file``.

    Args:
        total_bytes: the size of everything to read.
        stream: where to draw (stderr by default).
        label: the command, first on the line.
    """

    __slots__ = ("_done", "_last_draw", "_name", "_stream", "_tty", "label", "total")

    def __init__(self, total_bytes: int, stream: TextIO | None = None, label: str = "") -> None:
        self.total = max(total_bytes, 0)
        self._stream = stream if stream is not None else sys.stderr
        self._tty = self._stream.isatty()
        self.label = label
        self._done = 0
        self._name = ""
        self._last_draw = 0.0

    @property
    def done(self) -> int:
        """Bytes read so far."""
        return self._done

    def start_file(self, name: str) -> None:
        """Name the file being read now, and draw."""
        self._name = name
        self._draw(force=True)

    def advance(self, nbytes: int) -> None:
        """Count ``nbytes`` more; redraw at most a few times a second."""
        self._done += nbytes
        self._draw(force=False)

    def finish(self) -> None:
        """Draw the final state and end the line."""
        self._name = ""
        self._draw(force=True)
        if self._tty:
            self._stream.write("\n")
        self._stream.flush()

    def _draw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_draw < _MIN_INTERVAL:
            return
        self._last_draw = now
        share = self._done / self.total if self.total else 1.0
        text = (
            f"{self.label}: {min(share, 1.0):4.0%} "
            f"({self._done / 1e6:.1f} of {self.total / 1e6:.1f} MB) {self._name}"
        ).rstrip()
        # On a terminal the line redraws itself; elsewhere each state is its own line.
        self._stream.write(f"\r\x1b[2K{text}" if self._tty else text + "\n")
        self._stream.flush()
