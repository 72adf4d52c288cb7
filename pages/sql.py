"""SQL page: a read-only DuckDB console over the index (`programs`) and run results (`runs`).

A statement from the link (`?sql=`) runs on load only for a local explorer; in read-only mode (a hosted one) it is
shown and runs when the visitor presses Run, so a shared link cannot make every visitor's session run heavy SQL.
"""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import context, links, tables
from ui.text import md

TIME_LIMIT_S = 5.0
MAX_ROWS = 1000

cfg = context.settings()
store = context.store_path()
st.title("SQL console")
st.caption("Read-only DuckDB over the tables `programs` (the index: one row per program, no code), `runs` "
           "(re-run results) and `triage` (CPU triage results). Each statement runs in its own process, "
           f"capped at {MAX_ROWS:,} rows, "
           f"{TIME_LIMIT_S:g} s and about 2 GiB of memory.")

default = "SELECT split, count(*) AS rows, avg(ok::int) AS ok_rate FROM programs GROUP BY split ORDER BY split"
query = st.text_area("Query", value=links.param("sql", default) or default, height=140, key="sql_text")
links.sync_params(sql=query.strip() if query.strip() != default else None)

clicked = st.button("Run", type="primary", key="sql_run")
if clicked:
    st.session_state["sql_ran"] = query
from_link = links.param("sql") is not None and not cfg.read_only
if clicked or from_link or st.session_state.get("sql_ran") == query:
    try:
        table = api.console(store, cfg, query, max_rows=MAX_ROWS, timeout_s=TIME_LIMIT_S)
    except (api.ConsoleError, api.StoreError) as error:
        st.error(md(error))
    else:
        tables.show(table, key="sql_result")
elif links.param("sql") is not None:
    st.info("This link holds a statement: read it above, then press Run to run it.")
links.copy_link("sql", sql=query.strip() if query.strip() != default else None)
