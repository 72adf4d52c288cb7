"""Which lines of a batch of the search index match a `LineQuery`, found over many lines at once.

A batch's lines end with their newline and lie one after another in its data, so a pattern that cannot match a
newline (and has no anchor but `\\b`, `\\B`, `(?m)$`) matches a run of lines exactly when it matches one of them.
A query with a case-sensitive `literal` that every line it matches holds is answered by finding that text: RE2
first marks the blocks of `BLOCK_LINES` lines that hold it (it skips ahead with memchr), then Arrow's
`split_pattern_regex` gives every place it occurs in those blocks (each as long as the literal), and the lines
holding them come from the lines' offsets (numpy's `searchsorted`): no cost per line. Where most blocks hold it
(`dense`, from the batch before), every block is split without the first pass. The query's regex then checks
only those lines. A query without a literal is matched block by block, then in the blocks that matched
`SUB_BLOCK_LINES` lines at a time, then line by line (Arrow's cost per string is paid only where a match is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries.search.holes import Possible
from queries.store import SKELETON_MARKERS

BLOCK_LINES = 64
SUB_BLOCK_LINES = 8
DENSE_SHARE = 0.5  # above this share of blocks holding the literal, the next batches skip the RE2 pass


@dataclass(frozen=True)
class LineQuery:
    regex: str  # RE2 that cannot match a newline: the lines it matches are the answer
    literal: str = ""  # case-sensitive text that every line `regex` matches holds ("": none known)
    exact: bool = False  # `regex` matches exactly the lines holding `literal`
    any_case: str = ""  # text that every line `regex` matches holds, in any case (where `literal` is "")
    text: str = ""  # the literal `regex` is, where the query is a literal search (in any case where `any_case`)
    pieces: str = ""  # RE2: a trigram part's skeleton line it matches is of a row the query matches ("": none)
    possible: Possible | None = None  # what a trigram part's row's skeleton lines must match for it to match


def literal_regex(literal: str) -> str:
    """An RE2 pattern matching `literal` as it is: every ASCII character but letters, digits and '_' as \\x{..}.
    RE2 finds a literal 5-30x faster than `match_substring` on program texts (it skips ahead with memchr)."""
    return "".join(ch if (ch.isascii() and (ch.isalnum() or ch == "_")) or not ch.isascii() else f"\\x{{{ord(ch):x}}}"
                   for ch in literal)


def literal_query(literal: str, ignore_case: bool) -> LineQuery:
    """The lines holding `literal` (which has no newline)."""
    regex = ("(?i)" if ignore_case else "") + literal_regex(literal)
    on_pieces = "" if any(chr(b) in literal for b in SKELETON_MARKERS) else regex  # a marker stands for a cut word
    if ignore_case:
        return LineQuery(regex, any_case=literal, text=literal, pieces=on_pieces)
    return LineQuery(regex, literal, exact=True, text=literal, pieces=on_pieces)


def accepted(regex: str, texts: pa.Array) -> np.ndarray:
    """Positions of the texts `regex` matches."""
    return np.flatnonzero(pc.match_substring_regex(texts, regex).to_numpy(zero_copy_only=False))


def matching_texts(query: LineQuery, texts: pa.Array) -> np.ndarray:
    """Positions of the texts (one line each, or none) `query` matches, matched one by one."""
    if query.exact:
        return np.flatnonzero(pc.match_substring(texts, query.literal).to_numpy(zero_copy_only=False))
    return accepted(query.regex, texts)


def matching_lines(query: LineQuery, lines: pa.StringArray, dense: bool,
                   held: dict[str, tuple[np.ndarray, float]] | None = None) -> tuple[np.ndarray, float]:
    """(positions of the lines `query` matches, ascending; the share of blocks holding its literal, 0 if none).
    `held`: the lines holding each literal found so far in `lines`, for other queries with the same literal."""
    if not query.literal:
        return _by_blocks(query.regex, lines), 0.0
    held = {} if held is None else held
    if query.literal not in held:
        held[query.literal] = _holding(query.literal, lines, dense)
    holding, share = held[query.literal]
    if query.exact or len(holding) == 0:
        return holding, share
    return holding[accepted(query.regex, lines.take(pa.array(holding)))], share


def _holding(literal: str, lines: pa.StringArray, dense: bool) -> tuple[np.ndarray, float]:
    """Positions of the lines holding `literal`, and the share of blocks that do."""
    offsets = _offsets(lines)
    blocks, bounds = _blocks(lines, offsets, BLOCK_LINES)
    hit = np.arange(len(blocks)) if dense else accepted(literal_regex(literal), blocks)
    if len(hit) == 0:
        return hit, 0.0
    lists = pc.split_pattern_regex(blocks if len(hit) == len(blocks) else blocks.take(pa.array(hit)),
                                   literal_regex(literal))
    per_block = np.diff(_offsets(lists)).astype(np.int64)  # pieces: places found + 1
    share = np.count_nonzero(per_block > 1) / len(blocks)
    pieces = lists.flatten()
    size = len(literal.encode("utf-8"))
    ends = np.cumsum(np.diff(_offsets(pieces)).astype(np.int64) + size)  # after each piece and what follows it
    before = np.concatenate(([0], ends))[np.cumsum(per_block) - per_block]  # `ends` before each block's first
    found = np.ones(len(pieces), bool)
    found[np.cumsum(per_block) - 1] = False  # a block's last piece is followed by no place found
    at = (ends - size - np.repeat(before, per_block))[found] + np.repeat(bounds[hit], per_block - 1)
    line = np.searchsorted(offsets, at, side="right") - 1
    return line[np.concatenate(([True], line[1:] != line[:-1]))] if len(line) else line, share


def _by_blocks(regex: str, lines: pa.StringArray) -> np.ndarray:
    offsets = _offsets(lines)
    hit = accepted(regex, _blocks(lines, offsets, BLOCK_LINES)[0])
    subs = _parts(hit, BLOCK_LINES // SUB_BLOCK_LINES, -(-len(lines) // SUB_BLOCK_LINES))
    subs = subs[accepted(regex, _blocks(lines, offsets, SUB_BLOCK_LINES)[0].take(pa.array(subs)))]
    candidates = _parts(subs, SUB_BLOCK_LINES, len(lines))
    return candidates[accepted(regex, lines.take(pa.array(candidates)))]


def _parts(blocks: np.ndarray, per_block: int, count: int) -> np.ndarray:
    """The numbers of the `per_block` parts of each block (of `count` parts in all)."""
    parts = (blocks[:, None] * per_block + np.arange(per_block)).ravel()
    return parts[parts < count]


def _blocks(lines: pa.StringArray, offsets: np.ndarray, size: int) -> tuple[pa.StringArray, np.ndarray]:
    """Runs of `size` lines as strings over the lines' data (no copy), and where each starts in it."""
    bounds = np.append(offsets[:-1:size], offsets[-1]).astype(np.int32)
    return pa.StringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds), lines.buffers()[2]), bounds[:-1]


def _offsets(array: pa.Array) -> np.ndarray:
    return np.frombuffer(array.buffers()[1], np.int32)[array.offset : array.offset + len(array) + 1]
