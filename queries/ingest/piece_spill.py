"""Ingest, the end of stage 1: a trigram part's skeleton lines and cut words (`index_pieces.py`) spilled a chunk at
a time and read back a range at a time (issue 48), so that merging them is bounded by the budget whatever the text.

Each chunk's distinct pieces are spilled grouped by a hash of their text into `BUCKETS` buckets, the buckets in
order, with where each bucket's pieces and (piece << 32 | row) pairs start. A piece's text is in one bucket
whichever chunk holds it, so the part's distinct pieces are the union over buckets of each bucket's distinct
pieces: the merge reads a run of buckets from every chunk (at most what it may hold, cut as the trigram keys'
ranges are: `index_grams.ranges_of`), merges it and appends its distinct pieces and postings to the output.

A chunk's spill file: int32 offsets of its pieces (from 0), their bytes, then their sorted uint64 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from queries.ingest.index_lines import text_data, text_offsets

BUCKETS = 1 << 10  # a piece's bucket: a hash of its text; a range is a run of buckets
_WEIGHTS = np.random.default_rng(48).integers(1, 1 << 32, 256, dtype=np.uint64).astype(np.uint32)


@dataclass(frozen=True)
class Spilled:
    """A chunk's spill file and, per bucket, where its pieces and pairs start (BUCKETS + 1 each)."""

    path: Path
    piece_starts: np.ndarray
    pair_starts: np.ndarray
    data_at: int  # where the pieces' bytes start in the file
    pairs_at: int  # and their pairs
    bucket_bytes: np.ndarray  # each bucket's bytes of pieces and pairs (what merging it holds, over a factor)

    def read(self, low: int, high: int) -> tuple[pa.StringArray, np.ndarray]:
        """The pieces of buckets [low, high), and their pairs, pieces numbered from the range's first."""
        first, last = int(self.piece_starts[low]), int(self.piece_starts[high])
        with open(self.path, "rb") as file:
            file.seek(4 * first)
            offsets = np.fromfile(file, np.int32, last - first + 1)
            file.seek(self.data_at + int(offsets[0]))
            data = np.fromfile(file, np.uint8, int(offsets[-1]) - int(offsets[0]))
            file.seek(self.pairs_at + 8 * int(self.pair_starts[low]))
            pairs = np.fromfile(file, np.uint64, int(self.pair_starts[high]) - int(self.pair_starts[low]))
        pieces = pa.StringArray.from_buffers(last - first, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(data))
        return pieces, pairs - (np.uint64(first) << np.uint64(32))


def spill_pieces(path: Path, pieces: pa.StringArray, pairs: np.ndarray, first_row: int) -> Spilled:
    """Write a chunk's distinct pieces and (piece << 32 | row) pairs, rows counted from `first_row`, bucket by
    bucket (module doc)."""
    offsets = text_offsets(pieces).astype(np.int64)
    data = text_data(pieces)[offsets[0] : offsets[-1]]
    offsets -= offsets[0]
    bucket = _buckets(data, offsets)
    order = np.argsort(bucket, kind="stable")
    rank = np.empty(len(order), np.uint64)
    rank[order] = np.arange(len(order), dtype=np.uint64)
    lengths = np.diff(offsets)[order]
    sorted_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    gather = np.arange(int(sorted_offsets[-1]), dtype=np.int64) + np.repeat(offsets[:-1][order] - sorted_offsets[:-1],
                                                                            lengths)
    pairs = np.sort((rank[(pairs >> np.uint64(32)).astype(np.int64)] << np.uint64(32)) | (pairs & np.uint64(0xFFFFFFFF)))
    piece_starts = np.searchsorted(bucket[order], np.arange(BUCKETS + 1))
    pair_starts = np.searchsorted(pairs >> np.uint64(32), piece_starts.astype(np.uint64))
    with open(path, "wb") as out:
        sorted_offsets.tofile(out)
        data[gather].tofile(out)
        (pairs + np.uint64(first_row)).tofile(out)
    data_at = 4 * len(sorted_offsets)
    bucket_bytes = np.diff(sorted_offsets[piece_starts].astype(np.int64)) + 8 * np.diff(pair_starts)
    return Spilled(path, piece_starts, pair_starts, data_at, data_at + int(sorted_offsets[-1]), bucket_bytes)


def _buckets(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each text's bucket: a sum of its bytes, each weighted by its position within the text, mixed."""
    lengths = np.diff(offsets)
    position = np.arange(len(data), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    weighted = (data.astype(np.uint32) + np.uint32(1)) * _WEIGHTS[position & 255]
    del position
    sums = np.zeros(len(lengths), np.uint32)
    filled = lengths > 0
    if filled.any():
        sums[filled] = np.add.reduceat(weighted, offsets[:-1][filled])
    return ((sums.astype(np.uint64) * np.uint64(0x9E3779B1)) >> np.uint64(16)) % np.uint64(BUCKETS)


class NpyAppender:
    """A 1-D .npy file written a part at a time: its header, written again once the length is known, is as long
    whatever the length (numpy leaves room in it for the shape to grow)."""

    def __init__(self, path: Path, dtype: type):
        self.file, self.dtype, self.length = open(path, "wb"), np.dtype(dtype), 0
        self._header()
        self.data_at = self.file.tell()

    def append(self, array: np.ndarray) -> None:
        array.astype(self.dtype, copy=False).tofile(self.file)
        self.length += len(array)

    def __enter__(self) -> NpyAppender:
        return self

    def __exit__(self, *failed) -> None:
        with self.file:
            if failed[0] is None:
                self.file.seek(0)
                self._header()
                if self.file.tell() != self.data_at:
                    raise RuntimeError(f"{self.file.name}: the .npy header grew with the array's length")

    def _header(self) -> None:
        np.lib.format.write_array_header_1_0(self.file, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                         "fortran_order": False, "shape": (self.length,)})
