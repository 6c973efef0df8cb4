"""Opening files that may be anything: only regular files, never blocking, bounded in size.

Shared by the readers of ``analyze`` (``transcripts/lines.py``) and the processor's state
snapshot: a FIFO, a device such as ``/dev/zero`` (or a symlink to one), a socket or a
directory where a file is expected is refused at once, without blocking on it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(OSError):
    """The path is no regular file; ``strerror`` says what it is."""


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading; anything else is refused at once, without blocking.

    Raises:
        OSError: the file cannot be opened (``NotRegularFile``: it is a FIFO, a device, a
            directory...).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind(mode)}): not read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path, limit: int) -> bytes | None:
    """The whole regular file, or None when it is larger than ``limit`` (raises ``OSError``)."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``a FIFO``, ``a directory``..."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
    ):  # fmt: skip
        if test(mode):
            return name
    return "not a file"
