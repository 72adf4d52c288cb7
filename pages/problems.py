"""Problems page: every problem with its candidate count, failure rate and label quantiles; open one."""

from __future__ import annotations

import numpy as np
import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import board, context, data, flags, links, widgets
from ui.labels import plural

cfg = context.settings()
info = context.current_store(cfg)
st.title("Problems")
st.caption(f"One row per problem (reference program). Labels in {cfg.label_unit}, over each problem's ranked "
           "candidates (correct, and passing the candidate filter). The distribution column draws log10 of the "
           "min, 10th, 50th, 90th percentile and max label. " + board.RANKED_HELP)

SORTS = {"candidates": "candidates", "failure rate": "failure_rate", "fastest label": "y_min",
         "median label": "y_median", "best measured speedup": "best_speedup", "spread (max/min)": "spread",
         "distinct candidates": "distinct_candidates", "title": "title"}
with st.sidebar:
    split = widgets.choice("Split", ["train", "test"], "split", key="problems_split")
    holdout = widgets.choice("Holdout group", data.holdout_groups(info, cfg), "holdout", key="problems_holdout")
    level = flags.level_choice("problems_level")
    sort = widgets.choice("Sort by", list(SORTS), "sort", key="problems_sort", allow_all=False)
    descending = st.toggle("Descending", value=links.param("asc") is None, key="problems_desc")
    links.sync_params(asc=None if descending else "1")
    st.caption("Ranked candidates")
    candidates = flags.candidate_toggles("problems")
text = widgets.text_param("Filter by title, key or test id", "q", key="problems_q", placeholder="e.g. conv or 1_23")

table = api.problems(info.path, cfg, Filters(split=split, holdout_group=holdout, level=level), sort=SORTS[sort],
                     descending=descending, c=candidates)
# what a reader compares first, in the first ~1000 px (1400 px minus the sidebar); ids and groups after
df = table.select(["problem_key", "title", "y_min", "y_median", "best_speedup", "spread", "candidates",
                   "failure_rate", "y_p10", "y_p90", "y_max", "ranked", "best_id", "problem_id", "holdout_group",
                   "distinct_candidates"]).to_pandas()
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
    df.insert(8, "distribution", [[] if np.isnan(r).all() else [float(v) for v in r] for r in logs])
    df = df.drop(columns=["y_p10", "y_p90", "y_max"])
st.caption(f"{plural(len(df), 'problem')} · select a row (or its `open` link) to open the problem")
config = {
    "title": st.column_config.TextColumn("problem", width="medium"),
    "y_min": st.column_config.NumberColumn(f"fastest ({cfg.label_unit})", format="%.4g", width=95),
    "y_median": st.column_config.NumberColumn(f"median ({cfg.label_unit})", format="%.4g", width=95),
    "best_speedup": st.column_config.NumberColumn("best speedup", format="%.3g×", width="small",
                                                  help="the best speedup vs reference measured by a re-run (the "
                                                  "latest, correct) of a ranked candidate; empty: none re-run"),
    "spread": st.column_config.NumberColumn("spread", format="%.3g×", width="small",
                                            help="slowest / fastest label of the ranked candidates"),
    "candidates": st.column_config.NumberColumn(format="%d", width="small"),
    "failure_rate": st.column_config.ProgressColumn("failure rate", min_value=0.0, max_value=1.0, format="percent",
                                                    width="small"),
    "ranked": st.column_config.NumberColumn(format="%d", width="small", help=board.RANKED_HELP),
    "distribution": st.column_config.LineChartColumn("label quantiles (log10)", width="small"),
    "distinct_candidates": st.column_config.NumberColumn("distinct", format="%d", width="small"),
    "best_id": st.column_config.TextColumn("fastest row", width="small"),
}
widgets.linked_table(df, key="problems_table", target="problem", id_column="problem_key", param="problem",
                     column_config=config, height="auto" if len(df) <= 15 else 600)
links.copy_link("problems", split=split, holdout=holdout, sort=sort, asc=None if descending else "1", q=text,
                level=None if level is None else str(level),
                with_no_triton="1" if candidates.with_no_triton else None,
                with_flagged="1" if candidates.with_flagged else None)
