"""The code search index of a store, read memory-mapped: which rows may hold a literal.

Layout and how it is built: `queries/ingest/search_index.py`. For a literal, `SearchIndex.literal(...)` gives the
rows whose reference holds it (exact: every distinct reference text is matched directly, by the same Arrow
function a full scan uses) and the rows whose candidate part may hold it (from the posting lists of its
trigrams; they must be verified), or None for the latter when the index cannot narrow them (a literal under
three bytes, or only of trigrams too common to have postings). Both sides together never miss a row that a full
scan finds: the candidate part starts `overlap` bytes before the cut, and only trigrams that lie within that
distance of the literal's end are used, so an occurrence that crosses the cut still has them in the candidate
part.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries.search_trigrams import pattern_codes
from queries.store import SEARCH_INDEX_VERSION, SEARCH_META, search_path, search_shard_path

UTF8_MAX = 4  # bytes a character can take: an ignore-case match may be longer in bytes than the literal
# letters whose case-insensitive matches include characters outside ASCII (KELVIN SIGN, LONG S), so their
# trigrams are not used for ignore-case searches
_FOLDS_OUTSIDE_ASCII = frozenset(b"ksKS")


@dataclass(frozen=True)
class LiteralRows:
    ref_hits: np.ndarray  # bool per row: its reference holds the literal (a hit, no verification needed)
    to_verify: np.ndarray | None  # rows (positions in docs) whose candidate part may hold it; None: all others


class SearchIndex:
    def __init__(self, store: Path):
        meta = json.loads(search_path(store, SEARCH_META).read_text())
        if meta.get("version") != SEARCH_INDEX_VERSION:
            raise ValueError(f"search index version {meta.get('version')!r}, this code reads {SEARCH_INDEX_VERSION}")
        self.store, self.overlap = store, int(meta["overlap"])
        self.docs = _mapped(search_path(store, "docs.arrow"))
        self.refs = _mapped(search_path(store, "refs.arrow"))
        self.common = np.load(search_path(store, "common.npy"), mmap_mode="r")
        self.doc_ref = self.docs["ref"].to_numpy()
        shards = self.docs["shard"].to_numpy()
        self.shards = np.unique(shards).tolist()
        self.base = {s: int(np.searchsorted(shards, s)) for s in self.shards}  # first row of each shard
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    @property
    def rows(self) -> int:
        return self.docs.num_rows

    def literal(self, literal: str, ignore_case: bool) -> LiteralRows:
        matched = pc.match_substring(self.refs["text"], literal, ignore_case=ignore_case)
        ref_hits = matched.to_numpy(zero_copy_only=False)[self.doc_ref]
        codes = self._usable_codes(literal, ignore_case)
        if len(codes) == 0:
            return LiteralRows(ref_hits, None)
        found = [self._shard_rows(shard, codes) + self.base[shard] for shard in self.shards]
        return LiteralRows(ref_hits, np.concatenate(found) if found else np.empty(0, np.int64))

    def _usable_codes(self, literal: str, ignore_case: bool) -> np.ndarray:
        """Distinct codes of the literal's trigrams that narrow the rows: near enough its end (the cut), with
        postings (not common), and for ignore-case only ASCII ones whose letters fold within ASCII."""
        raw = literal.encode("utf-8")
        codes = pattern_codes(raw)
        if len(codes) == 0:
            return codes
        if ignore_case:
            chars_from = np.array([len(raw[j:].decode("utf-8", "ignore")) + 1 for j in range(len(codes))])
            near = UTF8_MAX * chars_from <= self.overlap
            plain = np.array([all(b < 0x80 and b not in _FOLDS_OUTSIDE_ASCII for b in raw[j:j + 3])
                              for j in range(len(codes))])
            codes = codes[near & plain]
        else:
            codes = codes[np.arange(len(codes)) >= len(raw) - 1 - self.overlap]
        codes = np.unique(codes)
        return codes[~np.isin(codes, self.common)]

    def _shard_rows(self, shard: int, codes: np.ndarray) -> np.ndarray:
        """Rows of `shard` (positions within it) whose candidate part holds every one of `codes`."""
        trigrams, offsets, postings = self._shard(shard)
        at = np.searchsorted(trigrams, codes)
        if np.any(at >= len(trigrams)) or np.any(trigrams[np.minimum(at, len(trigrams) - 1)] != codes):
            return np.empty(0, np.int64)  # some trigram is in no candidate of this shard
        lists = sorted((postings[offsets[i]:offsets[i + 1]] for i in at.tolist()), key=len)
        rows = np.asarray(lists[0])
        for other in lists[1:]:
            rows = np.intersect1d(rows, other, assume_unique=True)
            if len(rows) == 0:
                break
        return rows.astype(np.int64)

    def _shard(self, shard: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self._lock:
            if shard not in self._arrays:
                self._arrays[shard] = tuple(np.load(search_shard_path(self.store, shard, kind), mmap_mode="r")
                                            for kind in ("trigrams", "offsets", "postings"))
            return self._arrays[shard]


def _mapped(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


_OPEN: dict[tuple[str, float], SearchIndex] = {}
_OPEN_LOCK = threading.Lock()
KEEP_OPEN = 4


def open_index(store: Path) -> SearchIndex | None:
    """The store's search index (kept open per store and build), or None when the store has none this code
    reads (built before the index existed, by another version of it, or damaged)."""
    meta = search_path(store, SEARCH_META)
    try:
        key = (str(meta), meta.stat().st_mtime)
    except FileNotFoundError:
        return None
    with _OPEN_LOCK:
        if key not in _OPEN:
            while len(_OPEN) >= KEEP_OPEN:  # a rebuilt store's old index goes, in time
                _OPEN.pop(next(iter(_OPEN)))
            try:
                _OPEN[key] = SearchIndex(Path(store))
            except (OSError, ValueError, KeyError, pa.ArrowException):
                return None
        return _OPEN[key]
