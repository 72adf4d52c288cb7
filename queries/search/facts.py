"""Search hits with what a reader needs to pick one (problem title, label, latest verdict) and how many rows
match in all: a wrapper over `queries.search.engine.search_code` (complete, with the exact total) that joins the
index rows of the hits it shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from common.settings import Settings
from queries.db import connect
from queries.filters import NO_FILTERS, Filters
from queries.search.engine import search_code


@dataclass(frozen=True)
class SearchHits:
    rows: pa.Table  # id, title, y, ok, measured_status, measured_error, line, snippet, snippet_html
    hits: int  # matching rows found (all of them when `counted_all`)
    counted_all: bool  # every program that could match was searched, so `hits` is the true count
    rows_scanned: int
    elapsed_s: float
    method: str  # how the search answered (`queries.search.engine.SearchResult.method`)
    note: str  # why it was a full scan, for the user


def search_hits(store: Path | str, settings: Settings, pattern: str, *, regex: bool = False, limit: int = 100,
                time_budget_s: float | None = None, f: Filters = NO_FILTERS, ignore_case: bool = False,
                progress: Callable[[int, int], None] | None = None) -> SearchHits:
    """The first `limit` matching rows with their facts, and the number of matching rows."""
    found = search_code(store, settings, pattern, regex=regex, limit=limit, time_budget_s=time_budget_s, f=f,
                        ignore_case=ignore_case, progress=progress)
    rows = connect(store, settings).execute("search_facts", tables={"hits": found.rows})
    return SearchHits(rows, found.total, found.complete, found.rows_scanned, found.elapsed_s, found.method, found.note)
