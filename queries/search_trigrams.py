"""Byte trigrams of program texts, vectorized with numpy: the unit of the code search index
(`queries/ingest/search_index.py` writes it, `queries/search_index.py` reads it).

A trigram's code is its three bytes, ASCII letters lowered, read as a little-endian integer: `b0 | b1 << 8 |
b2 << 16`. Lowering makes one index serve case-sensitive and case-insensitive searches (both verify what the
index proposes). Read side and write side share these functions so that their codes agree.
"""

from __future__ import annotations

import numpy as np

CODE_SPACE = 1 << 24
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32


def lowered(data: np.ndarray) -> np.ndarray:
    """`data` (uint8) with ASCII capitals lowered (a copy)."""
    return _LOWER[data]


def codes_at(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code, start position) of every trigram of the lowered bytes `data`, positions in no particular order.

    Reads the buffer as unaligned little-endian uint32 at each of the four offsets and keeps the low three bytes,
    so each byte is touched about once per offset instead of three shifted copies being built.
    """
    n = len(data) - 2
    if n <= 0:
        return np.empty(0, np.uint32), np.empty(0, np.int64)
    padded = np.zeros(len(data) + 4, np.uint8)
    padded[: len(data)] = data
    raw = padded.tobytes()
    codes, starts = [], []
    for offset in range(4):
        count = (n - offset + 3) // 4
        if count <= 0:
            continue
        words = np.frombuffer(raw, dtype="<u4", count=count, offset=offset)  # reads 4 bytes at offset + 4i
        codes.append(words & 0xFFFFFF)
        starts.append(np.arange(offset, offset + 4 * count, 4, dtype=np.int64))
    return np.concatenate(codes).astype(np.uint32, copy=False), np.concatenate(starts)


def pattern_codes(pattern: bytes) -> np.ndarray:
    """The codes of every trigram of `pattern` (lowered), in pattern order (with repeats)."""
    data = lowered(np.frombuffer(pattern, np.uint8))
    if len(data) < 3:
        return np.empty(0, np.uint32)
    d = data.astype(np.uint32)
    return d[:-2] | (d[1:-1] << 8) | (d[2:] << 16)
