"""Problems page: every problem with its candidate count, failure rate and label quantiles; open one."""

from __future__ import annotations

import numpy as np
import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import context, data, links, widgets
from ui.labels import plural

cfg = context.settings()
info = context.current_store(cfg)
st.title("Problems")
st.caption(f"One row per problem (reference program). Labels in {cfg.label_unit}. The distribution column draws "
           "log10 of the min, 10th, 50th, 90th percentile and max label of each problem's passing candidates.")

SORTS = {"candidates": "candidates", "failure rate": "failure_rate", "median label": "y_median",
         "spread (max/min)": "spread", "distinct candidates": "distinct_candidates", "title": "title"}
with st.sidebar:
    split = widgets.choice("Split", ["train", "test"], "split", key="problems_split")
    holdout = widgets.choice("Holdout group", data.holdout_groups(info), "holdout", key="problems_holdout")
    sort = widgets.choice("Sort by", list(SORTS), "sort", key="problems_sort", allow_all=False)
    descending = st.toggle("Descending", value=links.param("asc") is None, key="problems_desc")
    links.sync_params(asc=None if descending else "1")
text = widgets.text_param("Filter by title, key or test id", "q", key="problems_q", placeholder="e.g. conv or 1_23")

table = api.problems(info.path, Filters(split=split, holdout_group=holdout), sort=SORTS[sort], descending=descending)
df = table.select(["problem_key", "problem_id", "title", "holdout_group", "candidates", "distinct_candidates",
                   "failure_rate", "y_min", "y_median", "y_p10", "y_p90", "y_max", "spread", "best_id"]).to_pandas()
if text and not df.empty:
    needle = text.lower()
    mask = (df["title"].fillna("").str.lower().str.contains(needle, regex=False)
            | df["problem_key"].str.contains(needle, regex=False)
            | df["problem_id"].fillna("").str.lower().str.contains(needle, regex=False))
    df = df[mask]
if not df.empty:
    quant = df[["y_min", "y_p10", "y_median", "y_p90", "y_max"]].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log10(np.where(quant > 0, quant, np.nan))
    df.insert(7, "distribution", [[] if np.isnan(r).all() else [float(v) for v in r] for r in logs])
    df = df.drop(columns=["y_p10", "y_p90", "y_max"])
st.caption(f"{plural(len(df), 'problem')} · select a row (or its `open` link) to open the problem")
config = {
    "failure_rate": st.column_config.ProgressColumn("failure rate", min_value=0.0, max_value=1.0, format="percent"),
    "distribution": st.column_config.LineChartColumn("label quantiles (log10)"),
    "y_min": st.column_config.NumberColumn(f"fastest ({cfg.label_unit})", format="%.4g"),
    "y_median": st.column_config.NumberColumn(f"median ({cfg.label_unit})", format="%.4g"),
    "spread": st.column_config.NumberColumn("spread (max / min)", format="%.3g×"),
    "candidates": st.column_config.NumberColumn(format="%d"),
    "distinct_candidates": st.column_config.NumberColumn("distinct", format="%d"),
    "best_id": st.column_config.TextColumn("fastest row"),
}
widgets.linked_table(df, key="problems_table", target="problem", id_column="problem_key", param="problem",
                     column_config=config, height="auto" if len(df) <= 15 else 600)
links.copy_link("problems", split=split, holdout=holdout, sort=sort, asc=None if descending else "1", q=text)
