"""The skeleton lines of a chunk of program texts (issue 48): its lines with each word that only one of its texts
holds cut out, a marker byte in its place, so that a code part whose lines rarely repeat still has lines that do,
for a search to match exactly.

Lines rarely repeat where each program renames its local names (or marks its lines): the line index is then as
large as the text. What the lines do share is the rest: `tl.load(`, ` = `, `BLOCK_SIZE`. A word (a run of
`[0-9A-Za-z_]` or of bytes of non-ASCII characters) that only one text of the chunk holds is cut out of its line
and replaced by a marker (`MARKERS`: \x01 where the word is ASCII, \x02 where it is not): what is left of each
line, its skeleton, repeats. The text between markers (a piece) is text of its row's line, so a row whose
skeleton holds a literal holds it; a literal that crosses a cut is in no skeleton, and is found by the trigrams
(its rows read). A skeleton keeps where the cuts lie in its line, so a regex can be matched on it: exactly where
its match needs no cut word, or where a repeat that takes any word takes the marker, and as "could match" where
the marker may stand for any word (`queries/search/holes.py`). Texts that hold a marker byte themselves have no
skeleton lines (`chunk_pieces`' last array): a search reads them.

The words cut out are kept too, each after a `.` where one is just before it, and after the word before that
`.` where the `.` alone lies between them (an attribute: `self.x_17`, `).x_17`; all the other bytes beside a word
made these 5x as large): a literal found in no skeleton lies across one of them, and which ones
it could lie across its text tells (`queries/search/words.py`), so only the rows holding those are read.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries.ingest.index_lines import NEWLINE
from queries.ingest.index_segments import distinct_sorted
from queries.store import SKELETON_MARKERS as MARKERS

DOT = ord(".")
_WORD = np.zeros(256, bool)
_WORD[[*range(ord("0"), ord("9") + 1), *range(ord("A"), ord("Z") + 1), *range(ord("a"), ord("z") + 1),
       ord("_"), *range(0x80, 0x100)]] = True


def chunk_pieces(data: np.ndarray, offsets: np.ndarray) -> tuple[pa.StringArray, np.ndarray, pa.StringArray,
                                                                 np.ndarray, np.ndarray]:
    """The distinct skeleton lines of the texts `data[offsets[i]:offsets[i + 1]]` (offsets from 0, int64, fewer
    than 2**31 bytes), and the sorted distinct (line << 32 | text) pairs; the same of the words cut out
    (`_dotted`); and the texts holding a marker byte (`MARKERS`), which have no skeleton lines."""
    n = len(data)
    if n == 0:
        return (pa.array([], pa.string()), np.empty(0, np.uint64), pa.array([], pa.string()), np.empty(0, np.uint64),
                np.empty(0, np.int64))
    word = _WORD[data]
    newline = data == NEWLINE
    # values: runs of word bytes, runs of other bytes, each newline alone, never across a text's end
    change = np.ones(n + 1, bool)
    change[1:-1] = (word[1:] != word[:-1]) | newline[1:] | newline[:-1]
    change[offsets[1:-1]] = True
    bounds = np.flatnonzero(change)
    values = pa.StringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds.astype(np.int32)),
                                         pa.py_buffer(data))
    row = np.searchsorted(offsets, bounds[:-1], side="right") - 1
    is_word = word[bounds[:-1]]
    encoded = pc.dictionary_encode(values)
    ids = encoded.indices.to_numpy()
    # a word's first and last text (values are in text order; numpy keeps the last of repeated assignments,
    # and were it not so, only where the cuts fall would change)
    first, last = np.empty(len(encoded.dictionary), np.int64), np.empty(len(encoded.dictionary), np.int64)
    first[ids[::-1]] = row[::-1]
    last[ids] = row
    is_newline = newline[bounds[:-1]]
    is_cut = is_word & (first[ids] == last[ids])
    words = _dotted(data, offsets, bounds, row, is_word, np.flatnonzero(is_cut))
    lines, line_row = _skeletons(data, bounds, row, is_newline, is_cut)
    raw = np.unique(np.searchsorted(offsets, np.flatnonzero((data == MARKERS[0]) | (data == MARKERS[1])),
                                    side="right") - 1)
    keep = ~np.isin(line_row, raw)
    return (*_distinct(lines.filter(pa.array(keep)), line_row[keep].astype(np.uint64)),
            *_distinct(words, row[is_cut].astype(np.uint64)), raw.astype(np.int64))


def _skeletons(data: np.ndarray, bounds: np.ndarray, row: np.ndarray, is_newline: np.ndarray,
               is_cut: np.ndarray) -> tuple[pa.StringArray, np.ndarray]:
    """Every line of the texts (without its newline; none after a text's last newline) with each cut word as one
    marker byte, and the text of each."""
    length = np.diff(bounds)
    out = np.where(is_newline, 0, np.where(is_cut, 1, length))
    starts_line = np.ones(len(length), bool)  # a line starts at a text's first value and after a newline
    starts_line[1:] = is_newline[:-1] | (row[1:] != row[:-1])
    line = np.cumsum(starts_line) - 1
    line_bytes = np.bincount(line, weights=out, minlength=int(line[-1]) + 1).astype(np.int64)
    line_offsets = np.concatenate(([0], np.cumsum(line_bytes)))
    at = np.concatenate(([0], np.cumsum(out)))[:-1]  # where each value goes
    gather = np.arange(int(line_offsets[-1]), dtype=np.int64) + np.repeat(bounds[:-1] - at, out)
    skeleton = data[gather]
    cut = np.flatnonzero(is_cut)
    wide = np.maximum.reduceat(data, bounds[:-1])[cut] >= 0x80 if len(cut) else np.zeros(0, bool)
    skeleton[at[cut]] = np.where(wide, MARKERS[1], MARKERS[0])
    lines = pa.StringArray.from_buffers(len(line_bytes), pa.py_buffer(line_offsets.astype(np.int32)),
                                        pa.py_buffer(skeleton))
    return lines, row[starts_line]


def _dotted(data: np.ndarray, offsets: np.ndarray, bounds: np.ndarray, row: np.ndarray, is_word: np.ndarray,
            at: np.ndarray) -> pa.StringArray:
    """The values `at` (words), each after the `.` just before it in its text, if any, and after the word before
    that `.` where the `.` is all that lies between them (`torch.randn_7`, `).randn_7`, `randn_7`)."""
    starts = bounds[at].astype(np.int64)
    dotted = starts > offsets[row[at]]
    dotted[dotted] = data[starts[dotted] - 1] == DOT
    named = dotted & (at >= 2)  # the value before is the `.` alone, and the one before it a word of the text
    before = np.maximum(at - 2, 0)
    named &= (starts - bounds[np.maximum(at - 1, 0)] == 1) & is_word[before] & (row[before] == row[at])
    starts = np.where(named, bounds[before], starts - dotted.astype(np.int64))
    lengths = bounds[at + 1] - starts
    text_offsets = np.concatenate(([0], np.cumsum(lengths)))
    gather = np.arange(int(text_offsets[-1]), dtype=np.int64) + np.repeat(starts - text_offsets[:-1], lengths)
    return pa.StringArray.from_buffers(len(at), pa.py_buffer(text_offsets.astype(np.int32)),
                                       pa.py_buffer(data[gather]))


def _distinct(texts: pa.StringArray, rows: np.ndarray) -> tuple[pa.StringArray, np.ndarray]:
    """The distinct texts, and the sorted distinct (text << 32 | row) pairs."""
    encoded = pc.dictionary_encode(texts)
    ids = encoded.indices.to_numpy().astype(np.uint64)
    return encoded.dictionary, distinct_sorted((ids << np.uint64(32)) | rows)
