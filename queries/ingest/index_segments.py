"""The search index's work on each batch of programs, done during stage 1's read where the batch's texts already
are (the per-program field workers: `program_fields.py`), so that the index never reads the code parts back.

A batch's rows that went to one code part are a segment: its programs are split at ingest's own cut into their
head and candidate lines (`index_lines.py`), the segment's distinct pieces found by one Arrow dictionary encoding,
and written to `SEGMENT_DIR/part-NNNNN-PPPPPPPPPP.npy` (code part, position of the segment's first row in it):
the distinct heads, each row's head, the distinct lines and the sorted distinct (line << 32 | row within the
part) pairs. `search_index.py` merges a part's segments at the end of stage 1.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries.ingest.index_lines import candidate_lines, text_data, text_offsets

SEGMENT_DIR = "search-parts"  # in the build folder, removed once the search index is written


def segment_path(folder: Path, part: int, position: int) -> Path:
    return Path(folder) / SEGMENT_DIR / f"part-{part:05d}-{position:010d}.npy"


def part_segments(folder: Path, part: int) -> list[tuple[int, Path]]:
    """(position of its first row, path) of each segment of code part `part`, in row order."""
    paths = (Path(folder) / SEGMENT_DIR).glob(f"part-{part:05d}-*.npy")
    return sorted((int(path.name[11:21]), path) for path in paths)


def remove_segments(folder: Path, from_part: int) -> None:
    """Delete the segments of code part `from_part` and later ones (their rows are being read again)."""
    for path in (Path(folder) / SEGMENT_DIR).glob("part-*.npy"):
        if int(path.name[5:10]) >= from_part:
            path.unlink()


def write_segments(texts: pa.Array, cut_bytes: np.ndarray, segments: list[tuple[int, int, str]]) -> None:
    """Index the batch's rows `texts` (`cut_bytes`: each one's UTF-8 bytes before ingest's cut), one segment per
    (first row in the batch, rows, path)."""
    texts = texts if texts.type == pa.string() else texts.cast(pa.string())
    for start, rows, path in segments:
        _write_segment(texts.slice(start, rows), cut_bytes[start : start + rows], int(Path(path).name[11:21]),
                       Path(path))


def read_segment(path: Path) -> tuple[list[str], np.ndarray, pa.StringArray, np.ndarray]:
    """(distinct heads, each row's position among them, distinct lines, sorted (line << 32 | row) pairs)."""
    head_offsets, head_data, row_head, offsets, data, pairs = _mapped_arrays(path, 6)
    return _strings(head_offsets, head_data).to_pylist(), row_head, _strings(offsets, data), pairs


def segment_sizes(path: Path) -> tuple[int, int, int]:
    """(bytes of its distinct heads, of its distinct lines, of its rows' candidate lines), reading the offsets
    and the pairs alone."""
    head_offsets, _, _, offsets, _, pairs = _mapped_arrays(path, 6)
    sizes = np.diff(offsets)
    return int(head_offsets[-1]), int(offsets[-1]), int(sizes[pairs.view(np.uint32)[1::2]].sum())


def _mapped_arrays(path: Path, count: int) -> list[np.ndarray]:
    """The `count` .npy arrays one after another in `path`, over a read-only mapping of it: the file was just
    written, so its pages are in the page cache (read into fresh memory instead, each page costs a fault and a
    copy: ~0.3 s a code part)."""
    arrays = []
    with open(path, "rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        for _ in range(count):
            version = np.lib.format.read_magic(file)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(file)
            size = int(np.prod(shape))
            arrays.append(np.frombuffer(mapped, dtype, size, file.tell()).reshape(shape))
            file.seek(file.tell() + size * dtype.itemsize)
    return arrays


def _write_segment(texts: pa.StringArray, cut_bytes: np.ndarray, first: int, path: Path) -> None:
    cut = text_offsets(texts)[:-1].astype(np.int64) + cut_bytes
    pieces, heads, lines, rows = candidate_lines(texts, cut)
    encoded = pc.dictionary_encode(pieces)
    indices = encoded.indices.to_numpy()
    distinct_heads, row_head = np.unique(indices[heads], return_inverse=True)
    line_texts, line = _lines_only(encoded.dictionary, indices[lines])
    head_offsets, head_data = _buffers(encoded.dictionary.take(pa.array(distinct_heads)))
    offsets, data = _buffers(line_texts)
    with open(path, "wb") as file:  # .npy arrays one after another (an .npz's CRCs cost ~0.2 s a code part)
        for array in (head_offsets, head_data, row_head.astype(np.int32), offsets, data,
                      _pairs(line, rows, first, len(texts))):
            np.save(file, array)


def _buffers(texts: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    """A string array's offsets, from 0, and its bytes."""
    offsets = text_offsets(texts)
    return offsets - offsets[0], text_data(texts)[offsets[0] : offsets[-1]]


def _strings(offsets: np.ndarray, data: np.ndarray) -> pa.StringArray:
    return pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))


def _lines_only(dictionary: pa.Array, line: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The distinct pieces that are lines (`line`: each line's position among them), renumbered: a text's part
    before its candidate lines is a piece too, and goes unless a line is the same text."""
    used = np.zeros(len(dictionary), bool)
    used[line] = True
    if used.all():
        return dictionary, line
    return dictionary.filter(pa.array(used)), (np.cumsum(used) - 1)[line]


def _pairs(line: np.ndarray, rows: np.ndarray, first: int, batch_rows: int) -> np.ndarray:
    """The distinct (line << 32 | row) pairs of a segment, sorted, rows counted from `first`. Sorted as uint32
    (line << bits | row within the segment) where that fits: twice as fast as uint64."""
    bits = max(batch_rows - 1, 1).bit_length()
    if (int(line.max(initial=0)) + 1) << bits <= 1 << 32:
        packed = distinct_sorted((line.astype(np.uint32) << bits) | rows.astype(np.uint32))
        return ((packed >> bits).astype(np.uint64) << 32) | ((packed & ((1 << bits) - 1)) + first).astype(np.uint64)
    return distinct_sorted((line.astype(np.uint64) << 32) | (rows + first).astype(np.uint64))


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (`np.unique` hashes, ~100x slower on these arrays)."""
    values = _radix_sorted(values) if values.dtype == np.uint32 else np.sort(values)
    if len(values) == 0:
        return values
    return values[np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))]


def _radix_sorted(values: np.ndarray) -> np.ndarray:
    """uint32 values sorted by two stable passes over 16 bits each (numpy's radix sort for 16-bit keys): 6.7 ms
    for a batch's 434k pairs where `np.sort` took 13.9 ms (without SIMD sorting, as on the 2-core benchmark VM)."""
    by_low = values[np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")]
    return by_low[np.argsort((by_low >> 16).astype(np.uint16), kind="stable")]
