"""Code search: substring or RE2 regex over program text, limited and time-bounded.

Scans the code shards in batches with `pyarrow.compute.match_substring(_regex)` (linear-time RE2, so no
catastrophic backtracking) and stops at `limit` matches or when `time_budget_s` is spent. Returns row ids with a
one-line snippet (plain, and HTML-escaped with the match marked), whether the scan was complete, and the number
of rows scanned. Program text is not kept.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.errors import TlxError
from queries.db import connect
from queries.filters import NO_FILTERS, Filters

MAX_LIMIT = 1000
BATCH_ROWS = 512
SNIPPET_CONTEXT = 60
_OPEN, _CLOSE = "\x00\x01tlx<", "\x00\x01tlx>"
RESULT_SCHEMA = pa.schema(
    [("id", pa.string()), ("line", pa.int64()), ("snippet", pa.string()), ("snippet_html", pa.string())]
)


class SearchError(TlxError):
    """The search pattern is empty or not a valid RE2 regular expression."""


@dataclass(frozen=True)
class SearchResult:
    rows: pa.Table  # id, line (1-based), snippet, snippet_html
    complete: bool  # every candidate row was scanned (False: stopped at the limit or the time budget)
    rows_scanned: int
    elapsed_s: float


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
    if regex_or_none is None:
        return pc.match_substring(texts, pattern, ignore_case=ignore_case)
    return pc.match_substring_regex(texts, regex_or_none)


def _matched_texts(texts: pa.Array, pattern: str, regex: str | None, ignore_case: bool) -> list[str | None]:
    """What matched first in each text (for the snippet): RE2 marks its first match with sentinels."""
    if regex is not None:
        marked = pc.replace_substring_regex(texts, regex, _OPEN + "\\0" + _CLOSE, max_replacements=1)
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


def search_code(store: Path | str, pattern: str, regex: bool = False, limit: int = 100,
                time_budget_s: float = 1.0, f: Filters = NO_FILTERS, ignore_case: bool = False) -> SearchResult:
    """Rows whose program contains `pattern` (substring, or RE2 regex when `regex`), in id order."""
    if not isinstance(pattern, str) or pattern == "":
        raise SearchError("enter a non-empty search pattern")
    regex_or_none = _regex_for(pattern, ignore_case) if regex else None
    limit = max(0, min(int(limit), MAX_LIMIT))
    started = time.monotonic()
    db = connect(store)
    allowed: pa.Array | None = None
    paths = list(db.store.code_paths)
    if not f.is_empty:
        ids = db.execute("filtered_ids", f.params())
        allowed = ids["id"].combine_chunks()
        paths = [db.store.code_path(shard) for shard in sorted(set(ids["code_shard"].to_pylist()))]
    found: list[dict] = []
    scanned = 0
    complete = True
    for path in paths:
        if len(found) >= limit or time.monotonic() - started > time_budget_s:
            complete = False
            break
        parquet = pq.ParquetFile(path)
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=["id", "x"]):
            if allowed is not None:
                batch = batch.filter(pc.is_in(batch.column(0), value_set=allowed))
            scanned += batch.num_rows
            hits = batch.filter(_matches(batch.column(1), pattern, regex_or_none, ignore_case))
            if hits.num_rows:
                hits = hits.slice(0, limit - len(found))
                matched = _matched_texts(hits.column(1), pattern, regex_or_none, ignore_case)
                for row_id, text, match in zip(hits.column(0).to_pylist(), hits.column(1).to_pylist(), matched,
                                               strict=True):
                    found.append(_snippet(row_id, text, match))
            if len(found) >= limit or time.monotonic() - started > time_budget_s:
                complete = False
                break
        if not complete:
            break
    return SearchResult(
        rows=pa.Table.from_pylist(found, schema=RESULT_SCHEMA),
        complete=complete,
        rows_scanned=scanned,
        elapsed_s=time.monotonic() - started,
    )
