"""Export page: download the filtered index (optionally with code) or the fastest correct row per problem."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.export import ExportError
from queries.filters import STATUSES, Filters
from ui import board, context, data, flags, links, near_dups, widgets
from ui.text import md

cfg = context.settings()
info = context.current_store(cfg)
store = info.path
st.title("Export")
st.caption("Download rows of the index as Parquet or JSON Lines. Program text is included only on request "
           "(it makes files large: ~10 kB per row).")

cols = st.columns(4)
with cols[0]:
    split = widgets.choice("Split", ["train", "test"], "split", key="export_split")
with cols[1]:
    holdout = widgets.choice("Holdout group", list(data.holdout_groups(info, cfg)), "holdout",
                             key="export_holdout")
with cols[2]:
    status = widgets.choice("Label", list(STATUSES), "status", key="export_status", closed=True)
with cols[3]:
    problem = widgets.text_param("Problem key", "problem", key="export_problem")
fastest = st.toggle("Only the fastest correct row per problem", value=links.param("fastest") == "1", key="export_fastest",
                    help="among the ranked candidates: " + board.RANKED_HELP)
candidates = flags.candidate_toggles("export") if fastest else None
with_code = st.toggle("Include program text", value=False, key="export_code")
fmt = st.radio("Format", ["parquet", "jsonl"], horizontal=True, index=1 if links.param("fmt") == "jsonl" else 0,
               key="export_fmt")
links.sync_params(fastest="1" if fastest else None, fmt=fmt if fmt != "parquet" else None)

f = Filters(split=split, holdout_group=holdout, status=status, problem_key=problem or None)
if st.button("Prepare file", type="primary", key="export_prepare"):
    try:
        with st.spinner("Building the file…"):
            payload = api.export(store, cfg, f, fmt, fastest_correct=fastest, include_code=with_code,
                                 c=candidates or api.Candidates())
    except ExportError as error:
        st.error(md(error))
        st.stop()
    name = "fastest-correct" if fastest else "rows"
    st.download_button(f"Download {name}.{fmt} ({len(payload) / 1e6:.2f} MB)", payload, file_name=f"{name}.{fmt}",
                       mime="application/octet-stream" if fmt == "parquet" else "application/x-ndjson",
                       key="export_download", on_click="ignore")
links.copy_link("export", split=split, holdout=holdout, status=status, problem=problem,
                fastest="1" if fastest else None, fmt=fmt if fmt != "parquet" else None,
                with_no_triton="1" if candidates and candidates.with_no_triton else None,
                with_flagged="1" if candidates and candidates.with_flagged else None)

near_dups.train_export(store, cfg, list(data.holdout_groups(info, cfg)))
