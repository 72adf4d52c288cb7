"""Byte trigrams of program texts, vectorized with numpy: the unit of the code search index
(`queries/ingest/search_index.py` writes it, `queries/search_index.py` reads it).

A trigram's code is its three bytes, ASCII letters lowered, read as a little-endian integer: `b0 | b1 << 8 |
b2 << 16`. Lowering makes one index serve case-sensitive and case-insensitive searches (both verify what the
index proposes). Read side and write side share these functions so that their codes agree.
"""

from __future__ import annotations

import numpy as np

CODE_SPACE = 1 << 24


def lowered(data: np.ndarray) -> np.ndarray:
    """`data` (uint8) with ASCII capitals lowered (a copy)."""
    return data + (((data - np.uint8(ord("A"))) < 26) * np.uint8(32)).astype(np.uint8)


def rare_codes(data: np.ndarray, keep: np.ndarray, length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(code, start position) of every trigram of the lowered bytes `data[:length]` whose code `keep` (a bool per
    code) marks, positions in no particular order.

    Reads the buffer as unaligned little-endian uint32 at each of the four offsets and keeps the low three bytes,
    so no shifted copies are built, and positions are made only for the trigrams kept (few: most are common).
    The last word read ends one byte past `length`: a `data` with a byte to spare after `length` is read in
    place, else it is copied once.
    """
    length = len(data) if length is None else length
    n = length - 2
    if n <= 0:
        return np.empty(0, np.uint32), np.empty(0, np.int64)
    if len(data) < length + 1:
        data = np.append(data[:length], np.uint8(0))
    codes, starts = [], []
    for offset in range(min(4, n)):
        words = np.frombuffer(data, dtype="<u4", count=(n - offset + 3) // 4, offset=offset) & np.uint32(0xFFFFFF)
        kept = np.flatnonzero(keep[words])
        codes.append(words[kept])
        starts.append(kept * 4 + offset)
    return np.concatenate(codes), np.concatenate(starts)


def pattern_codes(pattern: bytes) -> np.ndarray:
    """The codes of every trigram of `pattern` (lowered), in pattern order (with repeats)."""
    data = lowered(np.frombuffer(pattern, np.uint8))
    if len(data) < 3:
        return np.empty(0, np.uint32)
    d = data.astype(np.uint32)
    return d[:-2] | (d[1:-1] << 8) | (d[2:] << 16)
