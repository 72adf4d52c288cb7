"""Code search: substring or RE2 regex over program text, complete, with the exact number of matching rows.

With the store's search index (`queries/search/index.py`, an index of each code shard's distinct lines), a literal
without a newline is answered from it alone: the rows holding a line that contains it are the hits, no program is
read. So is a regex whose matches cannot span lines (`queries/search/regex.py`: `line_rule`). A regex that can
match a newline (`\\s`, `[^…]`) but has no anchor keeps the hits its lines show (matched without newlines,
`queries/search/rewrite.py`) and reads only the rows with a line that a match across lines could start in; any
other pattern (an anchored regex, a literal with a newline) reads only the rows that hold every text it requires
(its longest `NARROWING_PIECES` literals, split at newlines). All of a search's questions to the index are one
pass over its lines. A regex that requires none, and a store built before the index (or by another version of
it), are searched by a full scan (`queries/search/scan.py`, with progress), and the result says so. Matching is
always RE2's (`pyarrow.compute`: linear-time, no catastrophic backtracking), on lines as on whole texts, so the
index changes how many texts are read, never what is found. Returns the first `limit` matching rows in id order
with a one-line snippet (plain, and HTML-escaped with the match marked), and the total. Program text is not
kept; the matching rows (ids and locations) of recent complete searches are, per store build (`MEMO_BYTES`).
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.errors import TlxError
from common.settings import Settings
from queries.db import connect
from queries.filters import NO_FILTERS, Filters
from queries.memo import Memo
from queries.search.holes import NO_HOLES, HolePatterns, Possible, hole_patterns
from queries.search.index import SearchIndex, cache_bytes_of, open_index
from queries.search.lines import LineQuery, literal_query, literal_regex
from queries.search.regex import line_rule, required_literals
from queries.search.rewrite import line_patterns
from queries.search.scan import Group, Scanned, Scanner
from queries.store import store_version

MAX_LIMIT = 1000
MEMO_BYTES = 64 << 20  # matching rows (ids and locations) of recent complete searches, per process
SNIPPET_CONTEXT = 60
LONGEST_LITERAL = 100_000  # RE2 cannot compile a literal of ~1M characters: a longer one narrows by its start
NARROWING_PIECES = 3  # the longest texts a pattern requires that narrow the rows to read (each is a pass of the index)
_OPEN, _CLOSE = "\x00\x01tlx<", "\x00\x01tlx>"
RESULT_SCHEMA = pa.schema(
    [("id", pa.string()), ("line", pa.int64()), ("snippet", pa.string()), ("snippet_html", pa.string())]
)
FULL_SCAN_NOTE = "the pattern requires no text that narrows the rows to read: searched by full scan"
NO_INDEX_NOTE = ("this store has no search index that this version reads (built before it existed, or "
                 "damaged): searched by full scan; ingesting it again builds the index")


class SearchError(TlxError):
    """The search pattern is empty or not a valid RE2 regular expression."""


@dataclass(frozen=True)
class SearchResult:
    rows: pa.Table  # the first `limit` matching rows in id order: id, line (1-based), snippet, snippet_html
    complete: bool  # every row that could match was searched, so `total` is exact (False: the time budget cut it)
    rows_scanned: int  # program texts read and matched
    elapsed_s: float
    total: int = 0  # matching rows found (all of them when `complete`)
    method: str = "scan"  # "index" (the index alone), "index + verify" (and the texts it chose), "scan" (all)
    note: str = ""  # why the search was a full scan, for the user
    memoized: bool = False  # the matching rows came from an earlier identical search of the same build


def _regex_for(pattern: str, ignore_case: bool) -> str:
    """The RE2 pattern to run; SearchError when RE2 rejects it."""
    regex = ("(?i)" if ignore_case else "") + pattern
    try:
        pc.match_substring_regex(pa.array([""], pa.string()), regex)
    except pa.ArrowException as exc:
        detail = str(exc).split("\n")[0]
        raise SearchError(f"invalid regular expression {pattern[:80]!r}: {detail}") from exc
    return regex


def _matches(texts: pa.Array, pattern: str, regex_or_none: str | None, ignore_case: bool) -> pa.Array:
    if regex_or_none is not None:
        return pc.match_substring_regex(texts, regex_or_none)
    try:
        return pc.match_substring_regex(texts, ("(?i)" if ignore_case else "") + literal_regex(pattern))
    except pa.ArrowInvalid:  # a literal too long for RE2's program size limit
        return pc.match_substring(texts, pattern, ignore_case=ignore_case)


def _matched_texts(texts: pa.Array, pattern: str, regex: str | None, ignore_case: bool) -> list[str | None]:
    """What matched first in each text (for the snippet): RE2 marks its first match with sentinels."""
    if regex is not None:
        try:
            marked = pc.replace_substring_regex(texts, regex, _OPEN + "\\0" + _CLOSE, max_replacements=1)
        except pa.ArrowInvalid:  # RE2 cannot rewrite some matches (a \B at one end): Python's re places them
            return [_python_match(text, regex) for text in texts.to_pylist()]
        found = []
        for text in marked.to_pylist():
            start = text.find(_OPEN)
            end = text.find(_CLOSE, start + 1)
            found.append(text[start + len(_OPEN):end] if 0 <= start < end else None)
        return found
    if not ignore_case:
        return [pattern] * len(texts)
    found = []
    for text in texts.to_pylist():
        at = text.lower().find(pattern.lower())
        found.append(text[at:at + len(pattern)] if at >= 0 else None)
    return found


def _python_match(text: str, regex: str) -> str | None:
    try:
        found = re.search(regex, text)
    except re.error:
        return None
    return found.group(0) if found else None


def _clean(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _snippet(row_id: str, text: str, found: str | None) -> dict:
    at = text.find(found) if found else -1
    if at < 0:
        at, found = 0, ""
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at + len(found))
    line_end = len(text) if line_end < 0 else line_end
    lo = max(line_start, at - SNIPPET_CONTEXT)
    hi = min(max(line_end, at + len(found)), at + len(found) + SNIPPET_CONTEXT)
    before, match, after = text[lo:at], text[at:at + len(found)][:200], text[at + len(found):hi]
    prefix = "…" if lo > line_start else ""
    suffix = "…" if hi < line_end else ""
    return {
        "id": row_id,
        "line": text.count("\n", 0, at) + 1,
        "snippet": prefix + _clean(before + match + after) + suffix,
        "snippet_html": (html.escape(prefix + _clean(before)) + "<mark>" + html.escape(_clean(match))
                         + "</mark>" + html.escape(_clean(after) + suffix)),
    }


def search_code(store: Path | str, settings: Settings, pattern: str, regex: bool = False, limit: int = 100,
                time_budget_s: float | None = None, f: Filters = NO_FILTERS, ignore_case: bool = False,
                progress: Callable[[int, int], None] | None = None) -> SearchResult:
    """Rows whose program contains `pattern` (substring, or RE2 regex when `regex`): the first `limit` in id
    order, and how many there are. `time_budget_s` bounds the texts read (None: no bound); `progress(read,
    to_read)` is called as texts are read."""
    if not isinstance(pattern, str) or pattern == "":
        raise SearchError("enter a non-empty search pattern")
    regex_or_none = _regex_for(pattern, ignore_case) if regex else None
    limit = max(0, min(int(limit), MAX_LIMIT))
    started = time.monotonic()
    deadline = None if time_budget_s is None else started + time_budget_s
    db = connect(store, settings)
    allowed = db.execute("filtered_ids", f.params())["id"].combine_chunks() if not f.is_empty else None

    def matcher(texts: pa.Array) -> pa.Array:
        return _matches(texts, pattern, regex_or_none, ignore_case)

    # filtered searches are not remembered: a filter on measured verdicts changes with new run results
    key = (str(db.store.path), store_version(db.store.path), pattern, regex, ignore_case) if f.is_empty else None

    def answer() -> tuple[tuple, int | None]:
        index = open_index(db.store.path, cache_bytes_of(settings))
        scanner = Scanner(db.store.path)
        if index is None:
            scanned = scanner.scan(_every_group(scanner, db.store.code_paths), matcher, deadline, progress, allowed)
            hits = _Hits.of(scanned)
            method, note = "scan", NO_INDEX_NOTE
        else:
            hits, scanned, method, note = _indexed(index, scanner, pattern, regex_or_none, ignore_case, matcher,
                                                   allowed, deadline, progress)
        counts = Scanned([], [], [], scanned.rows_read, scanned.complete)  # what is kept of the scan
        return (hits, counts, method, note), hits.nbytes if scanned.complete else None

    if key is None:
        (hits, scanned, method, note), memoized = answer()[0], False
    else:
        (hits, scanned, method, note), memoized = _memo.get_or_compute(key, answer)
    first = hits.first(limit)
    texts = dict(db.store.programs(first))
    ids = [row_id for row_id, _, _ in first]
    programs = pa.array([texts[i] for i in ids], pa.string())
    matched = _matched_texts(programs, pattern, regex_or_none, ignore_case) if ids else []
    rows = [_snippet(i, texts[i], m) for i, m in zip(ids, matched, strict=True)]
    return SearchResult(
        rows=pa.Table.from_pylist(rows, schema=RESULT_SCHEMA),
        complete=scanned.complete,
        rows_scanned=scanned.rows_read,
        elapsed_s=time.monotonic() - started,
        total=hits.total,
        method=method,
        note=note,
        memoized=memoized,
    )


_memo = Memo(MEMO_BYTES)


def forget_searches() -> None:
    """Drop the remembered answers (benchmarks time the search itself)."""
    global _memo
    _memo = Memo(MEMO_BYTES)


class _Hits:
    """Matching rows as (id, shard, row group) columns; `first(n)` sorts only to pick the first n ids."""

    def __init__(self, ids: list[pa.Array], shards: list[np.ndarray], rgs: list[np.ndarray]):
        self.ids = pa.concat_arrays(ids) if ids else pa.array([], pa.string())
        self.shards = np.concatenate(shards) if shards else np.empty(0, np.int32)
        self.rgs = np.concatenate(rgs) if rgs else np.empty(0, np.int32)
        self.total = len(self.ids)
        self.nbytes = self.ids.nbytes + self.shards.nbytes + self.rgs.nbytes

    @classmethod
    def of(cls, scanned: Scanned, more: tuple | None = None) -> _Hits:
        ids = list(scanned.ids)
        shards = [np.full(len(a), s, np.int32) for a, s in zip(scanned.ids, scanned.shards, strict=True)]
        rgs = [np.full(len(a), g, np.int32) for a, g in zip(scanned.ids, scanned.rgs, strict=True)]
        if more is not None:
            ids.append(more[0])
            shards.append(more[1])
            rgs.append(more[2])
        return cls(ids, shards, rgs)

    def first(self, n: int) -> list[tuple[str, int, int]]:
        if n == 0 or self.total == 0:
            return []
        picked = pc.select_k_unstable(self.ids, n, [("dummy", "ascending")]) if n < self.total else \
            pc.sort_indices(self.ids)
        order = picked.to_numpy()[pc.sort_indices(self.ids.take(picked)).to_numpy()]
        return [(self.ids[int(i)].as_py(), int(self.shards[i]), int(self.rgs[i])) for i in order]


def _every_group(scanner: Scanner, paths: list[Path]) -> list[Group]:
    shards = [int(p.name[5:10]) for p in paths]
    return [Group(s, g, None) for s in shards for g in range(len(scanner.group_sizes(s)))]


def _indexed(index: SearchIndex, scanner: Scanner, pattern: str, regex: str | None, ignore_case: bool, matcher,
             allowed: pa.Array | None, deadline: float | None, progress) -> tuple[_Hits, Scanned, str, str]:
    """Hits by the index: rows it finds exactly, plus the rows it could not decide, read and verified (or every
    row, saying why)."""
    keep = np.ones(index.rows, bool) if allowed is None else \
        pc.is_in(index.docs["id"], value_set=allowed).to_numpy(zero_copy_only=False)
    exact, undecided, note = _decided(index, pattern, regex, ignore_case)
    exact &= keep
    verify = np.flatnonzero(undecided & keep & ~exact)
    scanned = scanner.scan(_groups_of(index, verify), matcher, deadline, progress)
    where = np.flatnonzero(exact)
    more = (index.docs["id"].take(pa.array(where)).combine_chunks(),
            index.docs["shard"].to_numpy()[where], index.docs["rg"].to_numpy()[where])
    method = "scan" if note else ("index + verify" if len(verify) else "index")
    return _Hits.of(scanned, more), scanned, method, note


def _decided(index: SearchIndex, pattern: str, regex: str | None,
             ignore_case: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """(rows that match, found from the lines alone; rows that may match and must be read; why every row must be
    read, or ""), from one pass over the index's lines. A literal without a newline is decided by its lines; so
    is a regex whose matches all lie within one line. A regex that can match a newline keeps what its lines show
    (`search_rewrite.line_patterns`: `within`) and reads the rows with a line a match across lines can start in
    (`starts`); other patterns read the rows that hold the newline-free pieces of the texts they require. A shard
    with trigrams decides nothing alone: its rows that may match are read (`SearchIndex.rows_with_lines`), of a
    regex only those that may hold the texts it requires."""
    nothing = np.zeros(index.rows, bool)
    within = starts = None
    if regex is None:
        if "\n" not in pattern and len(pattern) <= LONGEST_LITERAL:
            return (*index.rows_with_lines([literal_query(pattern, ignore_case)])[0], "")
        pieces, fold = [pattern], ignore_case
    elif _matches_empty(regex):  # an empty text, which has no line, matches it: no line decides
        return nothing, ~nothing, FULL_SCAN_NOTE
    else:
        pieces, fold = required_literals(pattern)
        fold = fold or ignore_case
        rule = line_rule(pattern)
        holes = hole_patterns(pattern, ignore_case) if index.piece_shards and rule.sound else NO_HOLES
        if rule.complete:  # on trigram parts, the rows to read also hold the texts it requires
            narrowing = [literal_query(p, fold) for p in _pieces(pieces)[:NARROWING_PIECES]] if index.grams else []
            (exact, may), *found = index.rows_with_lines([_line_query(regex, pieces, fold, holes)] + narrowing)
            return exact, np.logical_and.reduce([may] + [hit | maybe for hit, maybe in found]), ""
        lines = line_patterns(regex) if rule.sound else None
        if lines is not None and _runs(lines.within):
            within = _line_query(lines.within, pieces, fold, holes)
        if lines is not None and _runs(lines.starts) and not _matches_empty(lines.starts):
            starts = LineQuery(lines.starts, lines.start_literal, possible=_possible(holes.starts))
    narrowing = [starts] if starts else [literal_query(p, fold) for p in _pieces(pieces)[:NARROWING_PIECES]]
    if not narrowing:
        return index.rows_with_lines([within])[0][0] if within else nothing, ~nothing, FULL_SCAN_NOTE
    found = index.rows_with_lines(([within] if within else []) + narrowing)
    exact, may = found.pop(0) if within else (nothing, nothing)
    return exact, may | np.logical_and.reduce([hit | maybe for hit, maybe in found]), ""


def _line_query(regex: str, pieces: list[str], fold: bool, holes: HolePatterns = NO_HOLES) -> LineQuery:
    """The lines `regex` matches, with the longest text they all hold (in any case where `fold`), and what it
    matches on a trigram part's skeleton lines (`queries/search/holes.py`)."""
    longest = _longest(pieces)
    exact, possible = holes.exact if _runs(holes.exact) else "", _possible(holes.possible)
    if fold:
        return LineQuery(regex, any_case=longest, pieces=exact, possible=possible)
    return LineQuery(regex, longest, pieces=exact, possible=possible)


def _possible(possible: Possible | None) -> Possible | None:
    """`possible` where RE2 runs its patterns (with no run a marker, and every one)."""
    if possible is None:
        return None
    every = frozenset(range(len(possible.runs)))
    return possible if all(_runs(p) for p in (*possible.runs, possible.lines(every)[0],
                                               possible.lines(frozenset())[0])) else None


def _pieces(literals: list[str]) -> list[str]:
    """The newline-free pieces of `literals` (the first `LONGEST_LITERAL` characters of each), longest first."""
    return sorted({p[:LONGEST_LITERAL] for literal in literals for p in literal.split("\n") if p}, key=len,
                  reverse=True)


def _longest(literals: list[str]) -> str:
    pieces = _pieces(literals)
    return pieces[0] if pieces else ""


def _matches_empty(regex: str) -> bool:
    return bool(pc.match_substring_regex(pa.array([""], pa.string()), regex)[0].as_py())


def _runs(regex: str) -> bool:
    """Whether RE2 accepts `regex` (a rewrite can pass its program size limit)."""
    try:
        _matches_empty(regex)
    except pa.ArrowInvalid:
        return False
    return True


def _groups_of(index: SearchIndex, rows: np.ndarray) -> list[Group]:
    """Rows (positions in the index's docs, ascending) as row groups to read, each with the rows to match."""
    if len(rows) == 0:
        return []
    rows = np.sort(rows)
    shard = index.docs["shard"].to_numpy()[rows]
    rg = index.docs["rg"].to_numpy()[rows]
    rg_row = index.docs["rg_row"].to_numpy()[rows]
    key = (shard.astype(np.int64) << 32) | rg
    cuts = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(rows)]])
    return [Group(int(shard[a]), int(rg[a]), rg_row[a:b]) for a, b in zip(starts.tolist(), ends.tolist(),
                                                                            strict=True)]
