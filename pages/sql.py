"""SQL page: a read-only DuckDB console over the index (`programs`) and run results (`runs`)."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import context, links

store = context.store_path()
st.title("SQL console")
st.caption("Read-only DuckDB over the tables `programs` (the index: one row per program, no code) and `runs` "
           "(re-run results). Results are capped at 1,000 rows and 5 s.")

default = "SELECT split, count(*) AS rows, avg(ok::int) AS ok_rate FROM programs GROUP BY split ORDER BY split"
query = st.text_area("Query", value=links.param("sql", default) or default, height=140, key="sql_text")
links.sync_params(sql=query.strip() if query.strip() != default else None)

if st.button("Run", type="primary", key="sql_run") or links.param("sql"):
    try:
        table = api.console(store, query, max_rows=1000, timeout_s=5.0)
    except api.ConsoleError as error:
        st.error(str(error))
    else:
        st.caption(f"{table.num_rows:,} rows")
        st.dataframe(table.to_pandas(), hide_index=True, key="sql_result")
links.copy_link("sql", sql=query.strip() if query.strip() != default else None)
