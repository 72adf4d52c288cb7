"""Problem page: the label distribution of one problem, its failures and the leaderboard of fastest candidates."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import board, charts, compare, context, flags, links, near_dups, widgets
from ui.labels import error_name
from ui.text import md, md_code

cfg = context.settings()
info = context.current_store(cfg)
store = info.path

problem_key = links.param("problem")
if not problem_key:
    st.title("Problem")
    every = api.problems(store, cfg, Filters(), sort="candidates", descending=True)
    table = every.slice(0, 500).to_pandas()
    if table.empty:
        st.info("This store holds no problems.")
        st.stop()
    labels = dict(zip(table["problem_key"], table["title"].fillna("") if "title" in table else table["problem_key"], strict=True))
    which = (f"all {every.num_rows:,}" if every.num_rows <= table.shape[0] else
             f"the {table.shape[0]} with most candidates of {every.num_rows:,}; all are on the Problems page")
    picked = st.selectbox(
        f"Open a problem ({which})",
        [None, *table["problem_key"]],
        format_func=lambda k: "—" if k is None else f"{labels.get(k) or k} · {k}",
        key="pick_problem",
    )
    if picked is None:
        st.stop()
    links.sync_params(problem=picked)
    problem_key = picked

with st.sidebar:
    split = widgets.choice("Split", ["train", "test"], "split", key="problem_split")
    flag = flags.flag_choice("problem_flag")
    st.caption("Ranked candidates (header's fastest, leaderboard)")
    candidates = flags.candidate_toggles("problem")
f = Filters(split=split, problem_key=problem_key, flag=flag)

summary = api.problem_summary(store, cfg, problem_key, candidates)
if summary is None:
    st.title("Problem")
    st.error(f"No problem {md_code(problem_key)} in this store.")
    st.stop()

st.title(md(summary.get("title") or problem_key))
ids = [f"problem {md_code(problem_key)}"] + [f"{name} {md_code(summary[k])}" for k, name in
                                      (("problem_id", "test id"), ("holdout_group", "holdout group")) if summary.get(k)]
st.caption(" · ".join(ids))

cols = st.columns(5)
cols[0].metric("candidates", f"{summary['candidates']:,}", help=f"{summary['distinct_candidates']:,} distinct")
rate = summary.get("failure_rate")
cols[1].metric("failure rate", "—" if rate is None else f"{rate:.1%}")
cols[2].metric("ranked", f"{summary['ranked']:,}", help=board.RANKED_HELP)
median = summary.get("y_median")
cols[3].metric(f"median label ({cfg.label_unit})", widgets.fmt_label(median, "").strip(), help=board.RANKED_HELP)
cols[4].metric(f"fastest ({cfg.label_unit})", widgets.fmt_label(summary.get("y_min"), "").strip(),
               help=board.RANKED_HELP)

left, right = st.columns([3, 2])
with left:
    kinds = ["histogram", "ecdf", "box"]
    kind = links.param("view") if links.param("view") in kinds else "histogram"
    kind = st.segmented_control("View", kinds, default=kind, key="dist_kind") or "histogram"
    links.sync_params(view=None if kind == "histogram" else kind)
    latencies = api.problem_latencies(store, cfg, problem_key, f)
    ok_rows = latencies.filter(latencies["ok"]) if latencies.num_rows else latencies
    if ok_rows.num_rows:
        charts.show(charts.latency_distribution(ok_rows, cfg.label_unit, kind=kind), key="problem_dist")
    else:
        st.info("No candidate of this problem has a label (all failed).")
with right:
    failures = api.failures(store, cfg, f).to_pandas()
    if failures.empty:
        st.caption("No failures recorded for this problem.")
    else:
        charts.show(charts.count_bars(failures["error_type"].map(error_name), failures["rows"],
                                      "Failed rows by cause", failures["basis"]),
                    key="problem_errors")

st.subheader("Flags")
flags.flag_counts_table(api.flag_counts(store, cfg, f))

st.subheader("Fastest candidates")
st.caption("Ranked by the dataset's label; identical candidates are folded into one row (`copies`). "
           "**speedup vs reference** is measured on the runner (Model eager time / ModelNew time, both timed in "
           "the same run, as KernelBench reports it) for rows that were re-run, **verified** is that re-run's "
           "verdict and **Triton share** the part of its GPU time spent in Triton kernels; **speedup vs median** "
           "compares labels within the problem. " + board.RANKED_HELP)
fold_near = near_dups.fold_toggle(store, key="leaderboard_fold_near")
table = api.fastest(store, cfg, problem_key, k=50, f=f, c=candidates, fold_near=fold_near)
board.leaderboard(table, cfg.label_unit, key="leaderboard")
compare.compare_picker(table["id"].to_pylist(), key="leaderboard_compare")
near_dups.problem_clusters(store, cfg, problem_key, key="problem_clusters")
links.copy_link("problem", problem=problem_key, split=split, view=None if kind == "histogram" else kind, flag=flag,
                fold="near" if fold_near else None,
                with_no_triton="1" if candidates.with_no_triton else None,
                with_flagged="1" if candidates.with_flagged else None)
