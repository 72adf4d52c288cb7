"""Problem page: the label distribution of one problem, its failures and the leaderboard of fastest candidates."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import charts, context, data, links, widgets
from ui.labels import error_name

cfg = context.settings()
info = context.current_store(cfg)
store = info.path

problem_key = links.param("problem")
if not problem_key:
    st.title("Problem")
    table = api.problems(store, Filters(), sort="candidates", descending=True, limit=500).to_pandas()
    if table.empty:
        st.info("This store holds no problems.")
        st.stop()
    labels = dict(zip(table["problem_key"], table["title"].fillna("") if "title" in table else table["problem_key"], strict=True))
    picked = st.selectbox(
        "Open a problem (the 500 with most candidates; all are on the Problems page)",
        [None, *table["problem_key"]],
        format_func=lambda k: "—" if k is None else f"{labels.get(k) or k} · {k}",
        key="pick_problem",
    )
    if picked is None:
        st.stop()
    links.sync_params(problem=picked)
    problem_key = picked

summary = api.problem_summary(store, problem_key)
if summary is None:
    st.error(f"No problem `{problem_key}` in this store.")
    st.stop()

st.title(summary.get("title") or problem_key)
ids = [f"problem `{problem_key}`"] + [f"{name} `{summary[k]}`" for k, name in
                                      (("problem_id", "test id"), ("holdout_group", "holdout group")) if summary.get(k)]
st.caption(" · ".join(ids))

split = widgets.choice("Split", ["train", "test"], "split", key="problem_split", container=st.sidebar)
f = Filters(split=split, problem_key=problem_key)

cols = st.columns(4)
cols[0].metric("candidates", f"{summary['candidates']:,}", help=f"{summary['distinct_candidates']:,} distinct")
rate = summary.get("failure_rate")
cols[1].metric("failure rate", "—" if rate is None else f"{rate:.1%}")
median = summary.get("y_median")
cols[2].metric(f"median label ({cfg.label_unit})", widgets.fmt_label(median, "").strip())
cols[3].metric(f"fastest ({cfg.label_unit})", widgets.fmt_label(summary.get("y_min"), "").strip())

left, right = st.columns([3, 2])
with left:
    kinds = ["histogram", "ecdf", "box"]
    kind = links.param("view") if links.param("view") in kinds else "histogram"
    kind = st.segmented_control("View", kinds, default=kind, key="dist_kind") or "histogram"
    links.sync_params(view=None if kind == "histogram" else kind)
    latencies = api.problem_latencies(store, problem_key, f)
    ok_rows = latencies.filter(latencies["ok"]) if latencies.num_rows else latencies
    if ok_rows.num_rows:
        charts.show(charts.latency_distribution(ok_rows, cfg.label_unit, kind=kind), key="problem_dist")
    else:
        st.info("No candidate of this problem has a label (all failed).")
with right:
    failures = api.failures(store, f).to_pandas()
    if failures.empty:
        st.caption("No failures recorded for this problem.")
    else:
        charts.show(charts.count_bars(failures["error_type"].map(error_name), failures["rows"],
                                      "Failed rows by cause", failures["source"]),
                    key="problem_errors")

st.subheader("Fastest candidates")
st.caption("Identical candidates are folded into one row (`copies`). Speedup is the problem's median label over "
           "the candidate's label; re-run speedups compare with the reference on the runner's GPU.")
board = data.fastest(info, problem_key, k=50, f=f).to_pandas()
measured = api.runs(store, cfg.runs_dir, Filters(problem_key=problem_key)).to_pandas()
if not board.empty and not measured.empty:
    latest = measured.drop_duplicates("row_id")[["row_id", "speedup", "median_ms"]]  # newest first
    latest.columns = ["id", "rerun_speedup_vs_ref", "rerun_median_ms"]
    board = board.merge(latest, on="id", how="left")
board = board.drop(columns=["candidate_key"], errors="ignore")
widgets.linked_table(board, key="leaderboard", target="row", id_column="id", param="row", column_config={
    "y": st.column_config.NumberColumn(f"label ({cfg.label_unit})", format="%.4g"),
    "y_copies_max": st.column_config.NumberColumn("slowest copy", format="%.4g"),
    "speedup_vs_median": st.column_config.NumberColumn("speedup vs median", format="%.2f×"),
})
links.copy_link("problem", problem=problem_key, split=split, view=None if kind == "histogram" else kind)
