"""The search index's lines of a batch of program texts (ingest, stage 1), found over the batch's bytes
with numpy: where each text's candidate part starts, and its lines, as strings over the texts' own data (no copy).

Every line of a program must be in its head (its whole lines before the cut) or in its candidate lines (from the
line holding the cut to the end); which of the two holds a line never changes an answer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

NEWLINE = ord("\n")
SCAN_BYTES = 1 << 20  # newlines are found a cache-sized piece at a time (6x faster than over the whole batch)


def candidate_lines(texts: pa.StringArray, cut: np.ndarray) -> tuple[pa.StringArray, np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Each text split into its head, its whole lines before the line holding byte `cut[i]` (or its last byte
    when the cut is at its end), and its candidate lines, from that line to the end, each with its newline if it
    has one. Returned as `pieces`, strings over `texts`' data, per text its head then its candidate lines; with
    `heads`, the position of each text's head among the pieces, `lines`, those of the lines, and `rows`, the
    text (position in `texts`) of each line."""
    offsets = text_offsets(texts)
    data = text_data(texts)
    begin, end = int(offsets[0]), int(offsets[-1])
    newline = np.concatenate([np.flatnonzero(data[at : min(at + SCAN_BYTES, end)] == NEWLINE) + at
                              for at in range(begin, end, SCAN_BYTES)] or [np.empty(0, np.int64)])
    n = len(texts)
    first, last = offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)  # each text's [first, last)
    before = np.searchsorted(newline, np.minimum(cut, last - 1))  # newlines before the byte held
    holding = np.maximum(first, np.concatenate(([-1], newline))[before] + 1)  # where the line holding it starts
    # a line starts after each newline of a text but its last byte: those from the line holding the cut on are
    # newline[low[i]:high[i]] (a newline at `first` - 1 is the previous text's)
    low = np.searchsorted(newline, np.maximum(holding - 1, first))
    high = np.maximum(np.searchsorted(newline, last - 1), low)
    ranges = np.zeros(len(newline) + 1, np.int8)
    some = high > low
    ranges[low[some]] += 1  # (the ranges are disjoint: no index repeats within `low[some]`, nor `high[some]`)
    ranges[high[some]] -= 1
    starts = newline[np.cumsum(ranges[:-1], dtype=np.int8).view(bool)] + 1
    from_start = (holding == first) & (first < last)  # the text's first line is a candidate line
    sizes = 1 + from_start + high - low  # pieces of each text: its head, its first line if a candidate, the rest
    heads = np.cumsum(sizes) - sizes
    bounds = np.empty(len(starts) + int(from_start.sum()) + n + 1, np.int32)
    after_newline = np.ones(len(bounds) - 1, bool)
    after_newline[heads] = False
    after_newline[heads[from_start] + 1] = False
    bounds[:-1][after_newline] = starts
    bounds[heads] = first
    bounds[heads[from_start] + 1] = first[from_start]
    bounds[-1] = end
    is_line = after_newline
    is_line[heads[from_start] + 1] = True
    rows = np.repeat(np.arange(n), sizes - 1)
    pieces = pa.StringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds), texts.buffers()[2])
    return pieces, heads, np.flatnonzero(is_line), rows


def text_offsets(texts: pa.StringArray) -> np.ndarray:
    return np.frombuffer(texts.buffers()[1], np.int32)[texts.offset : texts.offset + len(texts) + 1]


def text_data(texts: pa.StringArray) -> np.ndarray:
    return np.frombuffer(texts.buffers()[2] or b"", np.uint8)
