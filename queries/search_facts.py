"""Search hits with what a reader needs to pick one (problem title, label, latest verdict) and how many rows
match in all. A wrapper over `queries.search.search_code`, whose scan it leaves alone: it asks for up to
`search.MAX_LIMIT` hits (the count), shows the first `limit` and joins their index rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from queries.db import connect
from queries.filters import NO_FILTERS, Filters
from queries.search import MAX_LIMIT, search_code


@dataclass(frozen=True)
class SearchHits:
    rows: pa.Table  # id, title, y, ok, measured_status, measured_error, line, snippet, snippet_html
    hits: int  # matching rows found (all of them when `counted_all`)
    counted_all: bool  # every program was searched, so `hits` is the true count
    rows_scanned: int
    elapsed_s: float

    @property
    def capped(self) -> bool:
        """The count stopped at `MAX_LIMIT` hits (not the time budget)."""
        return self.hits >= MAX_LIMIT


def search_hits(store: Path | str, pattern: str, *, regex: bool = False, limit: int = 100,
                time_budget_s: float = 1.0, f: Filters = NO_FILTERS, ignore_case: bool = False) -> SearchHits:
    """The first `limit` matching rows with their facts, and the number of matching rows (up to MAX_LIMIT)."""
    found = search_code(store, pattern, regex=regex, limit=MAX_LIMIT, time_budget_s=time_budget_s, f=f,
                        ignore_case=ignore_case)
    shown = found.rows.slice(0, max(int(limit), 0))
    rows = connect(store).execute("search_facts", tables={"hits": shown})
    return SearchHits(rows, found.rows.num_rows, found.complete, found.rows_scanned, found.elapsed_s)
