"""A small PNG reader for screenshot checks (8-bit RGB/RGBA, non-interlaced), numpy only."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

_CHANNELS = {2: 3, 6: 4}  # colour type -> channels


def read_png(path: Path) -> NDArray[np.uint8]:
    """The image as an (height, width, channels) array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None, "no IHDR chunk"
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8, f"unsupported bit depth {depth}"
    assert colour in _CHANNELS, f"unsupported colour type {colour}"
    assert interlace == 0, "interlaced PNG"
    channels = _CHANNELS[colour]
    raw = np.frombuffer(zlib.decompress(bytes(idat)), dtype=np.uint8)
    rows = raw.reshape(height, width * channels + 1)
    out = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        out[y] = _unfilter(int(rows[y, 0]), rows[y, 1:], previous, channels)
        previous = out[y]
    return out.reshape(height, width, channels)


def _unfilter(
    kind: int, line: NDArray[np.uint8], up: NDArray[np.uint8], bpp: int
) -> NDArray[np.uint8]:
    if kind == 0:
        return line.copy()
    if kind == 2:
        return (line.astype(np.uint16) + up).astype(np.uint8)
    if kind == 1:
        # Sub: a running sum per channel, modulo 256.
        pixels = line.reshape(-1, bpp).astype(np.uint64)
        return (np.cumsum(pixels, axis=0) % 256).astype(np.uint8).reshape(-1)
    result = np.zeros_like(line)
    cur, prev = line.tolist(), up.tolist()
    res = [0] * len(cur)
    for i, value in enumerate(cur):
        left = res[i - bpp] if i >= bpp else 0
        above = prev[i]
        if kind == 3:
            res[i] = (value + (left + above) // 2) & 0xFF
            continue
        corner = prev[i - bpp] if i >= bpp else 0
        p = left + above - corner
        pa, pb, pc = abs(p - left), abs(p - above), abs(p - corner)
        pred = left if pa <= pb and pa <= pc else (above if pb <= pc else corner)
        res[i] = (value + pred) & 0xFF
    result[:] = res
    return result
