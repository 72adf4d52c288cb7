"""The trigram index of a code part whose lines rarely repeat (built by `queries/ingest/index_grams.py`, which
describes its files): the rows that may hold a `LineQuery`'s text, read memory-mapped.

A trigram is three bytes within one line, each folded to its low 7 bits (`fold`: UTF-8's other bytes share the
codes of ASCII ones, a superset), packed into `GRAM_BITS` bits. A row holding a text holds each of its trigrams,
so the rows holding all of them are a superset of the rows holding the text: the engine reads and matches them.
A text ignoring case may hold each letter in either case: a trigram of it is any of its case variants, and one
holding a `k` or an `s` constrains nothing (RE2 folds them with `K` and `ſ`, which are not ASCII).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from queries.store import search_shard_path

GRAM_BITS = 21  # three 7-bit codes
NEWLINE = ord("\n")
SPARSE_FILE, GRAM_OFFSETS_FILE, GRAM_ROWS_FILE = "gram_sparse.npy", "gram_offsets.npy", "gram_rows.npy"
DENSE_FILE, BITMAPS_FILE = "gram_dense.npy", "gram_bitmaps.npy"
GRAM_FILES = (SPARSE_FILE, GRAM_OFFSETS_FILE, GRAM_ROWS_FILE, DENSE_FILE, BITMAPS_FILE)
_UNFOLDABLE = set(b"kKsS")  # ASCII letters whose case orbit holds a character that is not ASCII


def fold(data: np.ndarray) -> np.ndarray:
    return data & np.uint8(0x7F)


def text_grams(text: str, ignore_case: bool) -> list[np.ndarray]:
    """Per three bytes of `text`, the trigram codes a row that holds it holds one of; none where they constrain
    nothing (three bytes with a newline are not indexed)."""
    data = text.encode("utf-8")
    found = []
    for i in range(len(data) - 2):
        window = data[i : i + 3]
        if NEWLINE in window or ignore_case and any(b >= 0x80 or b in _UNFOLDABLE for b in window):
            continue
        variants = [{b, ord(chr(b).swapcase())} if ignore_case else {b} for b in window]
        codes = {(a & 0x7F) << 14 | (b & 0x7F) << 7 | (c & 0x7F) for a, b, c in itertools.product(*variants)}
        found.append(np.array(sorted(codes), np.uint32))
    return found


class GramPart:
    """One code part's trigram index."""

    def __init__(self, store: Path, shard: int, rows: int):
        self.rows = rows
        self.sparse, self.offsets, self.posted, self.dense, self.bitmaps = (
            np.load(search_shard_path(store, shard, name), mmap_mode="r") for name in GRAM_FILES)
        if len(self.offsets) != len(self.sparse) + 1 or int(self.offsets[-1]) != len(self.posted) or \
                self.bitmaps.shape != (len(self.dense), -(-rows // 8)):
            raise ValueError(f"trigram index of code part {shard}: its arrays disagree")

    def candidates(self, text: str, ignore_case: bool) -> np.ndarray:
        """Bool per row: it holds every trigram of `text` (all rows when `text` has none)."""
        found = np.ones(self.rows, bool)
        for codes in sorted(text_grams(text, ignore_case), key=self._postings):  # fewest rows first
            holding = np.zeros(self.rows, bool)
            for code in codes.tolist():
                if (i := _find(self.sparse, code)) is not None:
                    holding[self.posted[self.offsets[i] : self.offsets[i + 1]]] = True
                elif (j := _find(self.dense, code)) is not None:
                    holding |= np.unpackbits(self.bitmaps[j], count=self.rows).view(bool)
            found &= holding
            if not found.any():
                break
        return found

    def _postings(self, codes: np.ndarray) -> int:
        """Rows posted for `codes` (a dense trigram counted as every row): for ordering alone."""
        total = 0
        for code in codes.tolist():
            if (i := _find(self.sparse, code)) is not None:
                total += int(self.offsets[i + 1]) - int(self.offsets[i])
            elif _find(self.dense, code) is not None:
                total += self.rows
        return total


def _find(codes: np.ndarray, code: int) -> int | None:
    i = int(np.searchsorted(codes, np.uint32(code)))
    return i if i < len(codes) and int(codes[i]) == code else None
