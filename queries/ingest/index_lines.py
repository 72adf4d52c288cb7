"""The search index's lines of a batch of program texts (ingest, end of stage 1), found over the batch's bytes
with numpy: where each text's candidate part starts, and its lines, as strings over the texts' own data (no copy).

Every line of a program must be in its reference's whole lines (those ending with a newline before the cut) or
in its candidate lines (from the line holding the cut to the end); which of the two holds a line never changes an
answer, so the cut may be taken earlier than ingest's (`cut_bytes`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

NEWLINE = ord("\n")
SCAN_BYTES = 1 << 20  # newlines are found a cache-sized piece at a time (6x faster than over the whole batch)
CONTINUATION_BYTES = 3  # at most, after a UTF-8 character's first byte


def cut_bytes(texts: pa.StringArray, ref_chars: np.ndarray) -> np.ndarray:
    """Where each text's reference ends as a byte position in `texts`' data, or before it: `ref_chars`
    characters are at least as many bytes, so the cut is taken that many bytes in, moved back to the start of
    the character it falls in. Exact for texts that are ASCII before the cut; in the others the reference taken
    is shorter and the candidate part starts a line or so earlier (no text is decoded to count characters)."""
    offsets = text_offsets(texts)
    data = text_data(texts)
    cut = offsets[:-1].astype(np.int64) + ref_chars
    inside = cut < offsets[1:]  # the cut falls on a byte of the text, not at its end
    if not inside.any():
        return cut
    for _ in range(CONTINUATION_BYTES):
        back = inside & ((data[np.where(inside, cut, 0)] & 0xC0) == 0x80)
        if not back.any():
            break
        cut[back] -= 1
    return cut


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
    text = np.repeat(np.arange(n), np.diff(np.searchsorted(newline, offsets)))  # the text of each newline
    before = np.searchsorted(newline, np.minimum(cut, last - 1))  # newlines before the byte held
    holding = np.maximum(first, np.concatenate(([-1], newline))[before] + 1)  # where the line holding it starts
    after = newline + 1  # a line starts after each newline but a text's last byte
    keep = (after >= holding[text]) & (after < last[text])
    starts = after[keep]
    from_start = (holding == first) & (first < last)  # the text's first line is a candidate line
    each = 1 + from_start  # before a text's lines after newlines, its first byte starts its head, and its first line
    at = np.searchsorted(starts, first)
    bounds = np.insert(starts, np.repeat(at, each), np.repeat(first, each))
    heads = at + np.cumsum(each) - each
    is_line = np.ones(len(bounds), bool)
    is_line[heads] = False
    rows = np.repeat(np.arange(n), each + np.bincount(text[keep], minlength=n))[is_line]
    pieces = pa.StringArray.from_buffers(len(bounds), pa.py_buffer(np.append(bounds, end).astype(np.int32)),
                                         texts.buffers()[2])
    return pieces, heads, np.flatnonzero(is_line), rows


def text_offsets(texts: pa.StringArray) -> np.ndarray:
    return np.frombuffer(texts.buffers()[1], np.int32)[texts.offset : texts.offset + len(texts) + 1]


def text_data(texts: pa.StringArray) -> np.ndarray:
    return np.frombuffer(texts.buffers()[2] or b"", np.uint8)
