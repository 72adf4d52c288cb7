"""The pieces of a chunk of program texts (issue 48): its lines cut at the words that only one of its texts holds,
so that a code part whose lines rarely repeat still has text that does, for a literal search to find exactly.

Lines rarely repeat where each program renames its local names (or marks its lines): the line index is then as
large as the text. What the lines do share is the rest: `tl.load(`, ` = `, `BLOCK_SIZE`. A word (a run of
`[0-9A-Za-z_]` or of bytes of non-ASCII characters) that only one text of the chunk holds is cut out, with the
newlines; what is left of each line, its pieces, repeats. Every piece is text of its row's line, so a row whose
piece holds a literal holds it (the search index's `pieces` of a trigram part: exact positives); a literal that
crosses a cut is in no piece, and is found by the trigrams (its rows read). Any rule of cutting keeps that true:
this one only decides how often pieces repeat.

The words cut out are kept too, each after a `.` where one is just before it, and after the word before that
`.` where the `.` alone lies between them (an attribute: `self.x_17`, `).x_17`; all the other bytes beside a word
made these 5x as large): a literal found in no piece lies across one of them, and which ones
it could lie across its text tells (`queries/search/words.py`), so only the rows holding those are read.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries.ingest.index_lines import NEWLINE
from queries.ingest.index_segments import distinct_sorted

DOT = ord(".")
_WORD = np.zeros(256, bool)
_WORD[[*range(ord("0"), ord("9") + 1), *range(ord("A"), ord("Z") + 1), *range(ord("a"), ord("z") + 1),
       ord("_"), *range(0x80, 0x100)]] = True


def chunk_pieces(data: np.ndarray, offsets: np.ndarray) -> tuple[pa.StringArray, np.ndarray, pa.StringArray,
                                                                 np.ndarray]:
    """The distinct pieces of the texts `data[offsets[i]:offsets[i + 1]]` (offsets from 0, int64, fewer than
    2**31 bytes), and the sorted distinct (piece << 32 | text) pairs; the same of the words cut out (`_dotted`)."""
    n = len(data)
    if n == 0:
        return pa.array([], pa.string()), np.empty(0, np.uint64), pa.array([], pa.string()), np.empty(0, np.uint64)
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
    cut = newline[bounds[:-1]] | (is_word & (first[ids] == last[ids]))
    # pieces: the runs of values between cuts (and texts' ends), over the same bytes
    edge = np.concatenate(([True], cut[1:] | cut[:-1] | (row[1:] != row[:-1]), [True]))
    piece_bounds = bounds[np.flatnonzero(edge)]
    is_piece = ~cut[np.flatnonzero(edge)[:-1]]
    pieces = pa.StringArray.from_buffers(len(piece_bounds) - 1, pa.py_buffer(piece_bounds.astype(np.int32)),
                                         pa.py_buffer(data)).filter(pa.array(is_piece))
    piece_row = row[np.flatnonzero(edge)[:-1]][is_piece].astype(np.uint64)
    words = _dotted(data, offsets, bounds, row, is_word, np.flatnonzero(cut & is_word))
    return (*_distinct(pieces, piece_row), *_distinct(words, row[cut & is_word].astype(np.uint64)))


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
