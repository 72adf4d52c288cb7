"""The code search index of a store, read memory-mapped: which rows hold a line that a `LineQuery` matches.

Layout and how it is built: `queries/ingest/search_build.py`. `SearchIndex.rows_with_lines(queries)` matches
every distinct reference's whole lines and every code shard's distinct candidate lines (two threads: Arrow
releases the GIL while it decompresses and matches; each compressed batch is decompressed once for all the
queries; `queries/search/lines.py` finds the lines in it) and marks, per query, the rows that hold a line it
matches. A program's text is its reference's whole lines and its candidate lines (the candidate part starts
with the line that holds the cut), so for a query that cannot match a newline the rows marked are exactly those
whose text holds a match within one line. Matching is RE2's, as in a full scan, so the index changes how many
texts are read, never what is found. Decompressing the lines is ~40% of a search's work, so the decompressed
batches are kept in memory, up to `cache_bytes` for the process (`cache_bytes_of(settings)`: TLX_SEARCH_CACHE_MB;
a 601k-row store's lines are 1.1 GB), in the order first read and never evicted (a search reads every batch: an
evicting cache would lose each before its next use); an index that is no longer open (a rebuilt store's old one)
frees its batches.

A shard whose lines rarely repeat has a trigram index instead (`queries/search/grams.py`; index.json's "parts"
says which shards): there the rows holding every trigram of a query's literal are only a superset, returned as
rows to read and match (`rows_with_lines`'s second array), less those already decided: by their reference, or by
the shard's skeleton lines (its lines with the words one text holds cut out, a marker in each one's place,
`queries/ingest/index_pieces.py`, in the lines' format and matched the same way: a literal in one is in the row,
a regex as `LineQuery.pieces` says, `queries/search/holes.py`), and less those whose skeleton lines no match
could be in (`LineQuery.possible`, `_narrow`) or, for a literal, without a cut word it could lie across.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.settings import Settings
from queries.search.grams import GramPart
from queries.search.lines import DENSE_SHARE, LineQuery, matching_lines, matching_texts
from queries.search.words import word_queries
from queries.store import (
    LINES_FILE,
    OFFSETS_FILE,
    PIECE_FILES,
    POSTINGS_FILE,
    SEARCH_INDEX_READ,
    SEARCH_META,
    WORD_FILES,
    StoreError,
    search_path,
    search_shard_path,
    store_version,
)

THREADS = 2
MASKS = 4  # passes over a part's skeleton lines for the rows whose cut words hold a pattern's runs
PASS_ROWS = 128  # rows a pass over a part's skeleton lines (~0.1 CPU s) decides at least; fewer are read
FEW_ROWS = 16  # under a 16th of a part's rows, their cut words are looked up, not every one matched
LINE_FILES = (LINES_FILE, OFFSETS_FILE, POSTINGS_FILE)
_cached = 0  # bytes of decompressed lines kept, over every open index
_CACHE_LOCK = threading.Lock()


def cache_bytes_of(settings: Settings) -> int:
    """The decompressed lines a process keeps (TLX_SEARCH_CACHE_MB, default 1,200): a 601k-row store's are
    1,091 MiB."""
    return max(settings.search_cache_mb, 0) << 20


class SearchIndex:
    def __init__(self, store: Path, cache_bytes: int):
        """`cache_bytes`: the decompressed batches kept, over every open index of the process."""
        self.cache_bytes = cache_bytes
        meta = json.loads(search_path(store, SEARCH_META).read_text())
        if meta.get("version") not in SEARCH_INDEX_READ:
            raise ValueError(f"search index version {meta.get('version')!r}, this code reads {SEARCH_INDEX_READ}")
        self.store = store
        self.docs = _mapped(search_path(store, "docs.arrow"))
        refs = _mapped(search_path(store, "refs.arrow"))
        self.ref_lines, self.ref_of_line = _whole_lines(refs["text"].combine_chunks())
        self.refs = len(refs)
        self.doc_ref = self.docs["ref"].to_numpy()
        shards = self.docs["shard"].to_numpy()
        self.shards = np.unique(shards).tolist()
        self.base = {s: int(np.searchsorted(shards, s)) for s in self.shards}  # first row of each shard
        gram_shards = set(meta.get("parts", {}).get("grams", []))  # (version 2: none)
        self.grams = {s: GramPart(store, s, int(np.count_nonzero(shards == s))) for s in self.shards
                      if s in gram_shards}
        self.line_shards = [s for s in self.shards if s not in gram_shards]
        self.piece_shards = [s for s in self.grams if search_shard_path(store, s, PIECE_FILES[0]).is_file()]
        self.word_shards = [s for s in self.piece_shards if search_shard_path(store, s, WORD_FILES[0]).is_file()]
        choices = {c.get("part"): c for c in meta.get("choices", [])}
        self.raw = {s: np.zeros(self.grams[s].rows, bool) for s in self.piece_shards}  # rows without skeletons
        for s in self.piece_shards:
            self.raw[s][np.asarray(choices.get(s, {}).get("raw_rows", []), np.int64)] = True
        self._arrays: dict[tuple[int, str], tuple[pa.ipc.RecordBatchFileReader, np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, str, int], pa.StringArray] | None = {}  # None: forgotten
        for shard in self.line_shards:  # opened now, so that a damaged index is found before it answers
            self._shard(shard, LINE_FILES)
        for shard in self.piece_shards:
            self._shard(shard, PIECE_FILES)
        for shard in self.word_shards:
            self._shard(shard, WORD_FILES)

    @property
    def rows(self) -> int:
        return self.docs.num_rows

    def rows_with_lines(self, queries: list[LineQuery]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, (bool per row (position in docs): its reference or its candidate part has a line the query
        matches; bool per row: it may have one, and must be read to know (a shard with trigrams))."""
        hits = []
        for query in queries:
            ref_hit = np.zeros(self.refs, bool)
            ref_hit[self.ref_of_line[matching_texts(query, self.ref_lines)]] = True  # lines without their newline
            hits.append(ref_hit[self.doc_ref])
        # found exactly in skeleton lines too; and, in the same pass, the lines a match could be in (`_narrow`)
        on_pieces = {s: [_on_pieces(query) + self._possible(s, query) for query in queries] for s in self.piece_shards}
        work = [(s, LINE_FILES, [[query] for query in queries]) for s in self.line_shards]
        work += [(s, PIECE_FILES, on_pieces[s]) for s in self.piece_shards if any(on_pieces[s])]
        possible: dict[tuple[int, int], np.ndarray] = {}
        for (shard, files, _), rows in zip(work, self._matched(work), strict=True):
            for q, (hit, found) in enumerate(zip(hits, rows, strict=True)):
                if files == PIECE_FILES and queries[q].possible:
                    possible[shard, q] = found.pop()
                for at in found:
                    hit[at + self.base[shard]] = True
        maybe = [np.zeros(self.rows, bool) for _ in queries]
        for shard, part in self.grams.items():
            rows = slice(self.base[shard], self.base[shard] + part.rows)
            for hit, may, query in zip(hits, maybe, queries, strict=True):
                may[rows] = part.candidates(query.literal or query.any_case, not query.literal) & ~hit[rows]
        self._narrow(queries, hits, maybe, possible)
        return list(zip(hits, maybe, strict=True))

    def _possible(self, shard: int, query: LineQuery) -> list[LineQuery]:
        """The lines of a part a match of the query could be in, as far as they tell without the cut words (each
        run of word parts as written, or, in a part without cut words, any run a marker)."""
        if not query.possible:
            return []
        runs = range(0 if shard in self.word_shards else len(query.possible.runs))
        return [LineQuery(*query.possible.lines(frozenset(runs)))]

    def _narrow(self, queries: list[LineQuery], hits: list[np.ndarray], maybe: list[np.ndarray],
                possible: dict[tuple[int, int], np.ndarray]) -> None:
        """Of the rows of trigram parts left to read, leave out those whose skeleton lines show no match can be
        (`LineQuery.possible`: each run of word parts of the pattern as written, but those a cut word of the row
        holds, which may be markers), and of a literal's, those without a cut word it could lie across
        (`words.py`); a literal within a cut word is a hit."""
        undecided = {(s, q): bool(may[self._rows(s)].any()) for s in self.piece_shards for q, may in enumerate(maybe)}
        asked = {(s, q): query.possible for s in self.piece_shards for q, query in enumerate(queries)
                 if query.possible and undecided[s, q]}
        work = [(s, WORD_FILES, [_words(query, may[self._rows(s)]) for query, may in zip(queries, maybe, strict=True)])
                 for s in self.word_shards]
        work = [w for w in work if any(w[2])]
        could = {key: self.raw[key[0]].copy() for key in asked}  # a row without skeleton lines may hold anything
        for key in asked:
            could[key][possible[key]] = True
        holding: dict[tuple[int, int], np.ndarray] = {}  # per row, which runs a cut word of it holds (bits)
        for (shard, _, _), rows in zip(work, self._matched(work), strict=True):
            part = self._rows(shard)
            for q, found in enumerate(rows):
                if found:  # a literal's: within a cut word (a hit), and the ones it could lie across
                    hits[q][found[0] + self.base[shard]] = True
                    across = self.raw[shard].copy()
                    for overlapping in found[1:]:
                        across[overlapping] = True
                    maybe[q][part] &= across & ~hits[q][part]
        for key, asking in asked.items():
            if key[0] in self.word_shards and asking.runs:
                holding[key] = self._holding(key[0], maybe[key[1]][self._rows(key[0])] & ~could[key], asking.runs)
        masks = {key: _masks(bits[maybe[key[1]][self._rows(key[0])] & ~could[key]]) for key, bits in holding.items()}
        for key, bits in holding.items():  # a few rows are read for less than a pass over the skeleton lines
            left, passes = maybe[key[1]][self._rows(key[0])] & ~could[key] & (bits != 0), []
            for mask in masks[key]:
                group = left & (bits & ~mask == 0)
                if np.count_nonzero(group) > PASS_ROWS:
                    passes.append(mask)
                else:
                    could[key] |= group
            masks[key] = passes
        work = [(s, PIECE_FILES, [[LineQuery(*asked[s, q].lines(_bits(m))) for m in masks.get((s, q), [])]
                                  for q in range(len(queries))]) for s in self.piece_shards]
        work = [w for w in work if any(w[2])]
        for (shard, _, _), rows in zip(work, self._matched(work), strict=True):
            for q, found in enumerate(rows):
                for mask, rows_found in zip(masks.get((shard, q), []), found, strict=True):
                    matched = np.zeros(self.grams[shard].rows, bool)
                    matched[rows_found] = True
                    bits = holding[shard, q]  # the rows whose cut words hold these runs alone, or some of them
                    could[shard, q] |= matched & (bits & ~mask == 0) & (bits != 0)
        for (shard, q), rows in could.items():
            maybe[q][self._rows(shard)] &= rows & ~hits[q][self._rows(shard)]

    def _holding(self, shard: int, rows: np.ndarray, runs: tuple[str, ...]) -> np.ndarray:
        """Per row of a part, which of `runs` (bits) a cut word of it holds, of the rows `rows` (bool) at least:
        where they are few, their cut words are found from the postings (a pass over the words costs ~40 ms a
        run), else every cut word is matched."""
        bits = np.zeros(len(rows), np.int64)
        if np.count_nonzero(rows) * FEW_ROWS > len(rows):
            for r, found in enumerate(self._shard_rows(shard, WORD_FILES, [LineQuery(run) for run in runs])):
                bits[found] |= 1 << r
            return bits
        words, offsets, postings = self._shard(shard, WORD_FILES)
        at = np.flatnonzero(rows[postings])  # postings of those rows, and the word of each
        word = np.searchsorted(offsets, at, side="right") - 1
        firsts = np.cumsum([0] + [len(self._batch(words, (shard, WORD_FILES[0], i)))
                                  for i in range(words.num_record_batches)])
        batch = np.searchsorted(firsts, word, side="right") - 1
        texts = pa.concat_arrays([self._batch(words, (shard, WORD_FILES[0], int(b))).take(
            pa.array(word[batch == b] - firsts[b])) for b in np.unique(batch)]) if len(word) else pa.array([], pa.string())
        of_row = np.concatenate([postings[at][batch == b] for b in np.unique(batch)]) if len(word) else at
        for r, run in enumerate(runs):
            bits[of_row[pc.match_substring_regex(texts, run).to_numpy(zero_copy_only=False)]] |= 1 << r
        return bits

    def _rows(self, shard: int) -> slice:
        return slice(self.base[shard], self.base[shard] + self.grams[shard].rows)

    def _matched(self, work: list[tuple[int, tuple[str, str, str], list[list[LineQuery]]]]) -> list[
            list[list[np.ndarray]]]:
        """Per (shard, files, per query the line queries to match in them): per query, the rows of each of its
        line queries; two threads."""
        def rows_of(w):
            flat = [line_query for queries in w[2] for line_query in queries]
            found = iter(self._shard_rows(w[0], w[1], flat)) if flat else iter([])
            return [[next(found) for _ in queries] for queries in w[2]]

        with ThreadPoolExecutor(THREADS, thread_name_prefix="line-search") as pool:
            return list(pool.map(rows_of, work))

    def _shard_rows(self, shard: int, files: tuple[str, str, str], queries: list[LineQuery]) -> list[np.ndarray]:
        """Per query, the rows of `shard` (positions within it, with repeats) whose candidate part has a line it
        matches."""
        lines, offsets, postings = self._shard(shard, files)
        matched: list[list[np.ndarray]] = [[] for _ in queries]
        dense = [False] * len(queries)
        first = 0
        for i in range(lines.num_record_batches):
            batch, held = self._batch(lines, (shard, files[0], i)), {}
            for q, query in enumerate(queries):
                found, share = matching_lines(query, batch, dense[q], held)
                matched[q].append(found + first)
                dense[q] = share > DENSE_SHARE
            first += len(batch)
        if first != len(offsets) - 1:
            raise StoreError(f"{self.store}: search index of code part {shard} is damaged (lines and postings "
                             f"disagree); rebuild the store")
        return [_rows_of(np.concatenate(found) if found else np.empty(0, np.int64), offsets, postings)
                for found in matched]

    def _batch(self, lines: pa.ipc.RecordBatchFileReader, key: tuple[int, str, int]) -> pa.StringArray:
        """Batch `key[2]` of a lines file, decompressed: kept while the process's `cache_bytes` allow."""
        global _cached
        cache = self._cache  # None once forgotten, by another thread at any time
        batch = cache.get(key) if cache is not None else None
        if batch is None:
            batch = lines.get_batch(key[2]).column(0)
            with _CACHE_LOCK:
                if self._cache is not None and _cached + batch.nbytes <= self.cache_bytes:
                    self._cache[key] = batch
                    _cached += batch.nbytes
        return batch

    def forget_batches(self) -> None:
        """Free the decompressed batches kept (the index is no longer among those open)."""
        global _cached
        with _CACHE_LOCK:
            _cached -= sum(batch.nbytes for batch in (self._cache or {}).values())
            self._cache = None

    def _shard(self, shard: int, files: tuple[str, str, str]) -> tuple[pa.ipc.RecordBatchFileReader, np.ndarray,
                                                                       np.ndarray]:
        """A shard's lines (or its pieces: `files`), their offsets and postings."""
        with self._lock:
            if (shard, files[0]) not in self._arrays:
                lines = pa.ipc.open_file(pa.memory_map(str(search_shard_path(self.store, shard, files[0]))))
                offsets, postings = (np.load(search_shard_path(self.store, shard, name), mmap_mode="r")
                                     for name in files[1:])
                if len(offsets) == 0 or int(offsets[-1]) != len(postings):
                    raise ValueError(f"search index of code part {shard}: lines and postings disagree")
                self._arrays[shard, files[0]] = (lines, offsets, postings)
            return self._arrays[shard, files[0]]


def _on_pieces(query: LineQuery) -> list[LineQuery]:
    """What a query matches on a trigram part's skeleton lines (a literal's query itself, else its `pieces`
    pattern, with the text it requires)."""
    if not query.pieces:
        return []
    return [query] if query.text else [LineQuery(query.pieces, query.literal)]


def _masks(bits: np.ndarray) -> list[int]:
    """The sets of runs (bits) the cut words of rows hold, but none: each a pass over a part's skeleton lines, so
    past `MASKS` of them, one that holds them all."""
    masks = [int(m) for m in np.unique(bits) if m]
    return masks if len(masks) <= MASKS else [int(np.bitwise_or.reduce(np.array(masks)))]


def _bits(mask: int) -> frozenset[int]:
    return frozenset(r for r in range(mask.bit_length()) if mask >> r & 1)


def _words(query: LineQuery, undecided: np.ndarray) -> list[LineQuery]:
    """A literal search's queries over a trigram part's cut words (`words.word_queries`: those holding it, then
    those it could lie across, if any), where the part has rows it has not decided; none for any other query."""
    if not query.text or not undecided.any():
        return []
    containing, overlapping = word_queries(query.text, not query.literal)
    return [containing] + ([overlapping] if overlapping else [])


def _rows_of(lines: np.ndarray, offsets: np.ndarray, postings: np.ndarray) -> np.ndarray:
    """The rows (with repeats) holding the lines at positions `lines`."""
    starts = offsets[lines].astype(np.int64)
    lengths = offsets[lines + 1].astype(np.int64) - starts
    firsts = np.cumsum(lengths) - lengths  # where each line's rows go in the answer
    where = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - firsts, lengths)
    return postings[where].astype(np.int64)


def _whole_lines(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The lines of each text that end with a newline (the last, unfinished one is in the candidate part), and
    the text each comes from."""
    lines = pc.split_pattern(texts, "\n")
    counts = pc.list_value_length(lines).to_numpy(zero_copy_only=False)
    of_text = np.repeat(np.arange(len(texts)), counts)
    last = np.cumsum(counts) - 1
    whole = np.ones(len(of_text), bool)
    whole[last[counts > 0]] = False
    return pc.list_flatten(lines).filter(pa.array(whole)), of_text[whole]


def _mapped(path: Path) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


_OPEN: dict[tuple[str, int], SearchIndex] = {}
_OPEN_LOCK = threading.Lock()
KEEP_OPEN = 4


def open_index(store: Path, cache_bytes: int) -> SearchIndex | None:
    """The store's search index (kept open per store and `store_version`, the key of every cache of a store; the
    process keeps up to `cache_bytes` of decompressed lines, `cache_bytes_of(settings)`), or None when the store
    has none this code reads (built before the index existed, by another version of it, or damaged)."""
    try:
        key = (str(Path(store)), store_version(store))
    except StoreError:
        return None
    with _OPEN_LOCK:
        if key not in _OPEN:
            for old in [k for k in _OPEN if k[0] == key[0]] + list(_OPEN)[: max(0, len(_OPEN) + 1 - KEEP_OPEN)]:
                if old in _OPEN:  # a rebuilt store's old index goes, and the oldest beyond KEEP_OPEN
                    _OPEN.pop(old).forget_batches()
            try:
                _OPEN[key] = SearchIndex(Path(store), cache_bytes)
            except (OSError, ValueError, KeyError, pa.ArrowException):
                return None
        return _OPEN[key]
