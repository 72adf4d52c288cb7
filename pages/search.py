"""Search page: substring or regular-expression search over program text, results linking to rows.

Every search is complete: the page lists the first `limit` matching rows and says how many match in all. With
the store's line index most searches read no program (a literal without a newline, a regex that stays within
lines) or few; those it cannot narrow are full scans, shown with a progress bar and said so."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import context, links, widgets
from ui.labels import latest_status
from ui.text import md

cfg = context.settings()
store = context.store_path()
st.title("Search code")

cols = st.columns([4, 1, 1])
with cols[0]:
    pattern = widgets.text_param("Text or pattern", "q", key="search_q", placeholder="e.g. tl.dot or @triton.autotune")
mode = cols[1].radio("Match", ["substring", "regex"], index=1 if links.param("mode") == "regex" else 0, key="search_mode")
limit = int(cols[2].number_input("Limit", min_value=1, max_value=1000, value=links.int_param("limit", 100, 1, 1000),
                                 key="search_limit"))
ignore_case = st.toggle("Ignore case", value=links.param("icase") == "1", key="search_icase")
links.sync_params(mode=mode if mode == "regex" else None, limit=limit if limit != 100 else None,
                  icase="1" if ignore_case else None)

if not pattern:
    st.info("Type some text to search every program's source. The first rows up to the limit are listed, with the "
            "number of all matching rows.")
    st.stop()

bar = st.empty()


def _progress(done: int, total: int) -> None:
    if total:
        bar.progress(min(done / total, 1.0), text=f"scanning programs: {done:,} of {total:,}")


try:
    result = api.search_hits(store, cfg, pattern, regex=mode == "regex", limit=limit, ignore_case=ignore_case,
                             progress=_progress)
except api.SearchError as error:
    st.error(f"Cannot search for this pattern: {md(error)}")
    st.stop()
bar.empty()

hits = result.rows.drop_columns(["snippet_html"]).to_pandas()
hits.insert(3, "latest_status", [latest_status(s, e) for s, e in zip(hits["measured_status"], hits["measured_error"],
                                                                        strict=True)])
hits = hits.drop(columns=["ok", "measured_status", "measured_error"])
counted = f"{result.hits:,}" if result.counted_all else f"at least {result.hits:,}"
shown = f"the first {len(hits):,}" if len(hits) < result.hits else "all"
note = (f"{counted} matching {'row' if result.hits == 1 else 'rows'} ({shown} listed) · {result.rows_scanned:,} "
        f"programs read in {result.elapsed_s:.2f} s")
(st.caption if result.counted_all else st.warning)(note)
if result.note:
    st.info(f"Search: {md(result.note)}.")
widgets.linked_table(hits, key="search_hits", target="row", id_column="id", param="row",
                     column_config={"line": st.column_config.NumberColumn("line", format="%d"),
                                    "latest_status": st.column_config.TextColumn("latest re-run")})
links.copy_link("search", q=pattern, mode=mode if mode == "regex" else None, limit=limit if limit != 100 else None,
                icase="1" if ignore_case else None)
