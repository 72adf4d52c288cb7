"""A candidate part as the set near-duplicate detection compares: normalised tokens, their 5-grams, and the
MinHash of that set (datasketch; 256 permutations, BigCode's near-deduplication setting).

Normalised: comments are dropped, whitespace never counts (tokens are compared, not text), every string literal
(docstrings included) is one token `"`, and every identifier that is neither a Python keyword nor an attribute
(the name after a `.`) becomes `N`. Names are normalised because they are the programmer's choice: a candidate
whose variables and kernels were renamed (`x_ptr` for `in_ptr`, `BLOCK` for `BLOCK_SIZE`) is the same training
example, and without this a consistent rename of one busy name moves most 5-grams. Attributes keep their names
because they say what runs (`tl.load` against `tl.store`, `torch.matmul` against `torch.bmm`). Numbers are kept:
a changed constant (a BLOCK size) moves only the few 5-grams around it, so such copies still match, while two
programs built of different numbers still differ.
"""

from __future__ import annotations

import hashlib
import keyword
import re
import zlib

import numpy as np
from datasketch import MinHash

NGRAM = 5
NUM_PERM = 256
SEED = 1  # datasketch's permutations: every process must draw the same ones
# a string's prefix letters (f, rb, ...) are left outside it: a name token like any other
_STRING_OR_COMMENT = re.compile(
    r"""'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|(\#[^\n]*)"""
)
_KEEP = frozenset(keyword.kwlist)
_TOKEN = re.compile(r"\w+|\S")
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD], dtype=np.uint64)  # one odd multiplier per position of a 5-gram
_token_hashes: dict[str, int] = {}  # per process: token -> crc32 (deterministic across processes)
_TEMPLATE = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=int)


def tokens(candidate: str) -> list[str]:
    """The normalised tokens of a candidate part (see the module docstring)."""
    toks = _TOKEN.findall(_STRING_OR_COMMENT.sub(lambda m: "" if m.group(1) else ' " ', candidate))
    # a name: starts with a letter or _, is not a keyword, and does not follow a dot (an attribute)
    return ["N" if (t[0].isalpha() or t[0] == "_") and t not in _KEEP and before != "." else t
            for before, t in zip(["", *toks], toks, strict=False)]


def shingles(toks: list[str]) -> set[str]:
    """The token 5-grams (a shorter program: its whole token sequence, one shingle; no tokens: none)."""
    if len(toks) < NGRAM:
        return {" ".join(toks)} if toks else set()
    return {" ".join(toks[i : i + NGRAM]) for i in range(len(toks) - NGRAM + 1)}


def shingle_hashes(toks: list[str]) -> np.ndarray:
    """32-bit hashes of `shingles(toks)`, computed from per-token hashes (uint32, distinct values)."""
    for t in toks:
        if t not in _token_hashes:
            _token_hashes[t] = zlib.crc32(t.encode())
    h = np.fromiter((_token_hashes[t] for t in toks), np.uint64, len(toks))
    if len(h) < NGRAM:
        h = np.concatenate([h, np.zeros(NGRAM - len(h), np.uint64)]) if len(h) else h
    n = len(h) - NGRAM + 1
    mixed = np.zeros(max(n, 0), np.uint64)
    for i in range(NGRAM):
        mixed += h[i : i + n] * _MIX[i]
    return np.unique((mixed >> np.uint64(32)) ^ (mixed & np.uint64(0xFFFFFFFF))).astype(np.uint32)


def digest(toks: list[str]) -> bytes:
    """A digest of a normalised token sequence: equal digests mean equal normalised text."""
    return hashlib.blake2b("\x00".join(toks).encode(), digest_size=16).digest()


def sketch(toks: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(MinHash values: uint32[NUM_PERM], the shingle set: sorted distinct uint32 hashes) of tokens (not none)."""
    hashes = shingle_hashes(toks)
    m = _TEMPLATE.copy()
    m.update_batch(hashes.tolist())
    return m.hashvalues.astype(np.uint32), hashes


def signature(candidate: str) -> tuple[bytes, np.ndarray | None, np.ndarray | None]:
    """(digest, MinHash values, shingle set) of a candidate part; both None when it has no token."""
    toks = tokens(candidate)
    return (digest(toks), *sketch(toks)) if toks else (digest(toks), None, None)


def jaccard(a: str, b: str) -> float:
    """Exact Jaccard similarity of two candidate parts' 5-gram sets (what MinHash estimates)."""
    sa, sb = shingles(tokens(a)), shingles(tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
