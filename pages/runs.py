"""Runs page: the runner's queue and recent jobs, and re-run results (measured vs label) per row and problem."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import context, links, queue, widgets
from ui.labels import error_name

cfg = context.settings()
store = context.store_path()
st.title("Runs")

st.subheader("Runner queue")
if cfg.read_only:
    st.caption("Read-only mode: the explorer does not talk to a runner.")
else:
    queue.queue_panel(cfg, store)

split = widgets.choice("Split", ["train", "test"], "split", key="runs_split", container=st.sidebar)
f = Filters(split=split)
st.subheader("Measured vs label, per row")
st.caption(f"`ratio` = measured median (ms) / label ({cfg.label_unit}); a stable ratio across rows suggests the "
           "label's unit and GPU.")
per_row = api.runs(store, cfg, f).to_pandas()
if per_row.empty:
    st.info("No re-run results yet. Re-run rows from their page, or in bulk with `python -m runner bulk`.")
    st.stop()
widgets.linked_table(per_row, key="runs_rows", target="row", id_column="row_id", param="row",
                     column_config={"label_ok": st.column_config.CheckboxColumn("has a label")})
st.subheader("Agreement with the labels")
st.caption("The labels' harness is unknown. Per evaluation profile, each re-run row's latest verdict under it "
           "against its label: `label+ok` / `null+failed` agree, `label+failed` / `null+ok` do not; ratio = "
           "measured median / label. The profile with the highest agreement and the tightest ratios is the one "
           "that reproduces the labels (`python -m queries agreement --store DIR` prints the same).")
agree = api.agreement(store, cfg, f).to_pandas()
st.dataframe(agree, hide_index=True, key="runs_agreement", column_config={
    "rows": st.column_config.NumberColumn("rows re-run", format="%d"),
    "label_ok_measured_ok": st.column_config.NumberColumn("label + correct", format="%d"),
    "label_ok_measured_failed": st.column_config.NumberColumn("label + failed", format="%d"),
    "label_null_measured_ok": st.column_config.NumberColumn("no label + correct", format="%d"),
    "label_null_measured_failed": st.column_config.NumberColumn("no label + failed", format="%d"),
    "agreement": st.column_config.NumberColumn("agreement", format="percent"),
    "rows_with_ratio": st.column_config.NumberColumn("rows with a ratio", format="%d"),
    "ratio_p10": st.column_config.NumberColumn("ratio p10", format="%.3g"),
    "ratio_median": st.column_config.NumberColumn("ratio median", format="%.3g"),
    "ratio_p90": st.column_config.NumberColumn("ratio p90", format="%.3g"),
})
st.subheader("Per problem")
per_problem = api.runs_by_problem(store, cfg, f).to_pandas()
widgets.linked_table(per_problem, key="runs_problems", target="problem", id_column="problem_key", param="problem",
                     column_config={"label_ok": st.column_config.NumberColumn("with a label", format="%d")})
st.subheader("Static check vs measured verdict")
st.caption("Rows per (error found at ingest without running, latest measured verdict): what static checks catch.")
cross = api.runs_static_vs_measured(store, cfg, f).to_pandas()
cross["static_error"] = cross["static_error"].map(error_name)
cross["measured"] = cross["measured"].map(lambda v: "correct" if v == "ok" else error_name(v))
st.dataframe(cross, hide_index=True, key="runs_static_vs_measured", column_config={
    "static_error": st.column_config.TextColumn("static finding (ingest)"),
    "measured": st.column_config.TextColumn("latest measured verdict"),
    "rows": st.column_config.NumberColumn(format="%d"),
})
st.subheader("Reproducibility")
st.caption("Rows timed more than once: spread of their measured medians (cv = std / mean across runs).")
repeated = api.runs_reproducibility(store, cfg, f).to_pandas()
if repeated.empty:
    st.caption("No row has been timed twice yet (`python -m runner bulk --repeats 3` does that).")
else:
    widgets.linked_table(repeated, key="runs_repro", target="row", id_column="row_id", param="row")
links.copy_link("runs", split=split)
