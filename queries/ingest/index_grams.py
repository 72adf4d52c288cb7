"""Ingest, the end of stage 1: the search index of a code part whose lines rarely repeat (issue 48), trigram
posting lists over its rows, built from the part's own texts in memory bounded by the settings.

Where a part's lines rarely repeat, its distinct lines are as large as its text (a line-diverse 601k corpus made
the line index 142% of the code parts and searched it in 2-10 s). A trigram index stays small whatever the text:
per trigram (three bytes within one line, each folded to 7 bits: `queries/search/grams.py`), the rows of the
part whose text holds it. A literal's rows are among those holding all of its trigrams; the engine reads and
matches those rows (`queries/search/index.py`), so the answer is a full scan's.

Built in bounded memory: the part's texts are read back a chunk of row groups at a time (at most `CHUNK_ROWS`
rows and about a 64th of the budget's bytes), each chunk's distinct (trigram << 11 | row) keys sorted and spilled
to one file in the build folder (`SPILL_DIR`); the keys are then merged a range of trigrams at a time (ranges
cut from a count of keys per trigram prefix, each of at most budget / 64 keys: 64 bytes a key) into the files:

    search/part-NNNNN.gram_sparse.npy   uint32 trigrams with few rows, ascending
    search/part-NNNNN.gram_offsets.npy  uint32; gram_rows[offsets[i]:offsets[i+1]] are sparse trigram i's rows
    search/part-NNNNN.gram_rows.npy     uint16 (uint32 in a part of over 65,536 rows) rows, ascending per trigram
    search/part-NNNNN.gram_dense.npy    uint32 trigrams held by over a 16th of the rows (a bitmap is smaller)
    search/part-NNNNN.gram_bitmaps.npy  uint8 (dense trigrams, ceil(rows / 8)): np.packbits of each one's rows
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from queries.ingest.index_lines import NEWLINE, text_data
from queries.ingest.index_pieces import chunk_pieces
from queries.ingest.index_segments import distinct_sorted
from queries.ingest.piece_spill import Spilled, spill_pieces
from queries.search.grams import (
    BITMAPS_FILE,
    DENSE_FILE,
    GRAM_BITS,
    GRAM_OFFSETS_FILE,
    GRAM_ROWS_FILE,
    SPARSE_FILE,
    fold,
)
from queries.store import code_path, search_shard_path

ROW_BITS = 32 - GRAM_BITS
CHUNK_ROWS = 1 << ROW_BITS  # rows of a chunk: a key holds the row within its chunk
PREFIX_BITS = 14  # keys are counted per trigram prefix (its first two bytes) to cut the merge's ranges
SPILL_DIR = "search-grams"  # in the build folder, one file per code part while it is indexed
BYTES_PER_TEXT_BYTE = 64  # a chunk's peak memory per byte of its texts (codes, keys, the sort's indices, pieces)
BYTES_PER_KEY = 64  # the merge's peak memory per key of a range (rows, trigrams, the sort's indices, bitmaps)


def index_part_grams(folder: Path, shard: int, budget_bytes: int) -> tuple[int, dict[str, list[Spilled]], list[int]]:
    """Write code part `shard`'s trigram index under `folder/search/`; returns its distinct trigrams, the spill
    files of its chunks' skeleton lines and cut words (`index_pieces.py`; `piece_spill.py`), by kind ("pieces",
    "words"), which the caller merges and removes, and the rows without skeleton lines (their text holds a
    marker byte)."""
    spill = Path(folder) / SPILL_DIR / f"part-{shard:05d}.keys"
    spill.parent.mkdir(exist_ok=True)
    try:
        chunks, per_prefix, rows, pieces, raw = _spill_keys(folder, shard, spill,
                                                            max(budget_bytes // BYTES_PER_TEXT_BYTE, 1))
        grams = _merge(folder, shard, spill, chunks, per_prefix, rows, max(budget_bytes // BYTES_PER_KEY, 1))
        return grams, pieces, raw
    finally:
        spill.unlink(missing_ok=True)


def remove_spills(folder: Path) -> None:
    shutil.rmtree(Path(folder) / SPILL_DIR, ignore_errors=True)


def chunk_keys(texts: pa.Array) -> np.ndarray:
    """The distinct (trigram << ROW_BITS | position of the text) keys of at most CHUNK_ROWS texts, sorted: every
    three bytes that lie within one text and hold no newline."""
    if len(texts) > CHUNK_ROWS:
        raise ValueError(f"{len(texts)} texts in one chunk of the trigram index (at most {CHUNK_ROWS})")
    return _keys(*_bytes_of(texts))


def _bytes_of(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The texts' bytes, and int64 offsets of each in them from 0."""
    texts = texts.cast(pa.large_string()) if texts.type != pa.large_string() else texts
    offsets = np.frombuffer(texts.buffers()[1], np.int64)[texts.offset : texts.offset + len(texts) + 1].copy()
    data = text_data(texts)[offsets[0] : offsets[-1]]
    offsets -= offsets[0]
    return data, offsets


def _keys(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    if len(data) < 3:
        return np.empty(0, np.uint32)
    codes = fold(data).astype(np.uint32)
    keys = (codes[:-2] << np.uint32(2 * 7)) | (codes[1:-1] << np.uint32(7)) | codes[2:]
    keep = (data[:-2] != NEWLINE) & (data[1:-1] != NEWLINE) & (data[2:] != NEWLINE)
    for back in (1, 2):  # three bytes starting one or two before a text's end run into the next text
        at = offsets[1:] - back
        keep[at[(at >= 0) & (at < len(keep))]] = False
    keys <<= np.uint32(ROW_BITS)
    keys |= np.repeat(np.arange(len(offsets) - 1, dtype=np.uint32), np.diff(offsets))[:-2]
    return distinct_sorted(keys[keep])


def _spill_keys(folder: Path, shard: int, spill: Path,
                chunk_bytes: int) -> tuple[list[tuple[int, np.ndarray, int]], np.ndarray, int, dict[str, list[Spilled]],
                                           list[int]]:
    """Each chunk's sorted keys, one after another in `spill`, and its skeleton lines and words in files of
    their own; returns (first key, where each trigram prefix's keys start from it, first row) per chunk, the keys
    per trigram prefix, the part's rows, the lines' and words' spills and the rows without skeleton lines."""
    chunks, first_key, first_row = [], 0, 0
    per_prefix = np.zeros(1 << PREFIX_BITS, np.int64)
    code = pq.ParquetFile(code_path(folder, shard))
    pieces: dict[str, list[Spilled]] = {"pieces": [], "words": []}
    raw: list[int] = []
    with open(spill, "wb") as out:
        for texts in _chunks(code, chunk_bytes):
            data, offsets = _bytes_of(texts)
            keys = _keys(data, offsets)
            keys.tofile(out)
            found = chunk_pieces(data, offsets)
            raw += (found[4] + first_row).tolist()
            for kind, at in (("pieces", 0), ("words", 2)):
                path = spill.with_name(f"{spill.stem}-{len(chunks):05d}.{kind}")
                pieces[kind].append(spill_pieces(path, found[at], found[at + 1], first_row))
            del found
            counts = np.bincount(keys >> np.uint32(32 - PREFIX_BITS), minlength=len(per_prefix))
            per_prefix += counts
            chunks.append((first_key, np.concatenate(([0], np.cumsum(counts))), first_row))
            first_key += len(keys)
            first_row += len(texts)
    return chunks, per_prefix, first_row, pieces, raw


def _chunks(code: pq.ParquetFile, chunk_bytes: int):
    """The code part's texts, whole row groups at a time, up to CHUNK_ROWS rows and about `chunk_bytes`."""
    meta = code.metadata
    groups, rows, size = [], 0, 0
    for g in range(meta.num_row_groups):
        group_rows, group_bytes = meta.row_group(g).num_rows, meta.row_group(g).total_byte_size
        if groups and (rows + group_rows > CHUNK_ROWS or size + group_bytes > chunk_bytes):
            yield code.read_row_groups(groups, columns=["x"])["x"].combine_chunks()
            groups, rows, size = [], 0, 0
        groups.append(g)
        rows, size = rows + group_rows, size + group_bytes
    if groups:
        yield code.read_row_groups(groups, columns=["x"])["x"].combine_chunks()


def _merge(folder: Path, shard: int, spill: Path, chunks: list[tuple[int, np.ndarray, int]],
           per_prefix: np.ndarray, rows: int, range_keys: int) -> int:
    """The spilled keys, a range of trigram prefixes at a time (read, not mapped: the memory is the range's), as
    posting lists: sparse rows, or a bitmap where a trigram is in over a 16th of the rows."""
    row_type = np.uint16 if rows <= 1 << 16 else np.uint32
    sparse, offsets, posted, dense, bitmaps = [], [np.zeros(1, np.int64)], [], [], []
    posted_so_far = 0
    with open(spill, "rb") as spilled:
        for low, high in ranges_of(per_prefix, range_keys):
            grams, at = [], []
            for first, prefix_at, first_row in chunks:
                spilled.seek((first + int(prefix_at[low])) * 4)
                part = np.fromfile(spilled, np.uint32, int(prefix_at[high]) - int(prefix_at[low]))
                grams.append(part >> np.uint32(ROW_BITS))
                at.append((part & np.uint32(CHUNK_ROWS - 1)) + np.uint32(first_row))
            gram, row = np.concatenate(grams), np.concatenate(at)
            del grams, at
            order = np.argsort(gram, kind="stable")  # rows stay ascending within a trigram (chunks are in row order)
            gram, row = gram[order], row[order]
            del order
            starts = np.flatnonzero(np.concatenate(([True], gram[1:] != gram[:-1]))) if len(gram) else np.empty(0, int)
            counts = np.diff(np.append(starts, len(gram)))
            is_dense = counts * 16 > rows
            sparse.append(gram[starts[~is_dense]])
            in_sparse = np.repeat(~is_dense, counts)
            sparse_rows = row[in_sparse].astype(row_type)
            offsets.append(np.cumsum(counts[~is_dense]) + posted_so_far)
            posted_so_far += len(sparse_rows)
            posted.append(sparse_rows)
            if is_dense.any():
                dense.append(gram[starts[is_dense]])
                which = np.repeat(np.cumsum(is_dense) - 1, counts)[~in_sparse]
                bits = np.zeros((int(is_dense.sum()), rows), bool)
                bits[which, row[~in_sparse]] = True
                bitmaps.append(np.packbits(bits, axis=1))
    for name, parts, dtype in ((SPARSE_FILE, sparse, np.uint32), (GRAM_OFFSETS_FILE, offsets, np.uint32),
                               (GRAM_ROWS_FILE, posted, row_type), (DENSE_FILE, dense, np.uint32)):
        np.save(search_shard_path(folder, shard, name), np.concatenate(parts).astype(dtype) if parts else
                np.empty(0, dtype))
    np.save(search_shard_path(folder, shard, BITMAPS_FILE),
            np.concatenate(bitmaps) if bitmaps else np.empty((0, -(-rows // 8)), np.uint8))
    return sum(len(s) for s in sparse) + sum(len(d) for d in dense)


def ranges_of(per_prefix: np.ndarray, range_keys: int) -> list[tuple[int, int]]:
    """Runs of trigram prefixes (or piece buckets) [low, high) holding at most `range_keys` keys (or bytes) each
    (or one prefix that holds more: its keys are merged at once)."""
    ranges, low, held = [], 0, 0
    for prefix in np.flatnonzero(per_prefix).tolist():
        if held and held + per_prefix[prefix] > range_keys:
            ranges.append((low, prefix))
            low, held = prefix, 0
        held += int(per_prefix[prefix])
    if held:
        ranges.append((low, len(per_prefix)))
    return ranges
