"""Runs page: the runner's queue and recent jobs, and re-run results (measured vs label) per row and problem."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import context, links, rerun, widgets

cfg = context.settings()
store = context.store_path()
st.title("Runs")

st.subheader("Runner queue")
if cfg.read_only:
    st.caption("Read-only mode: the explorer does not talk to a runner.")
else:
    from runner.client import RunnerError, RunnerUnavailable

    try:
        jobs = rerun.runner_jobs(cfg)
    except (RunnerUnavailable, RunnerError) as error:
        st.info(f"No runner service answers at `{cfg.runner_url}` ({error}). Start one with `python -m runner serve`.")
    else:
        if not jobs:
            st.caption("The runner has no jobs yet.")
        else:
            frame = pd.DataFrame(
                [{"job": j.get("id"), "state": j.get("state"), "row": j.get("row_id"),
                  "verdict": (j.get("result") or {}).get("status"),
                  "error_type": (j.get("result") or {}).get("error_type"),
                  "submitted": j.get("submitted_at") or j.get("created_at")} for j in jobs]
            )
            counts = frame["state"].value_counts()
            st.caption(" · ".join(f"{state}: {n}" for state, n in counts.items()))
            st.dataframe(frame, hide_index=True, key="runner_jobs")

split = widgets.choice("Split", ["train", "test"], "split", key="runs_split", container=st.sidebar)
f = Filters(split=split)
st.subheader("Measured vs label, per row")
st.caption(f"`ratio` = measured median (ms) / label ({cfg.label_unit}); a stable ratio across rows suggests the "
           "label's unit and GPU.")
per_row = api.runs(store, cfg.runs_dir, f).to_pandas()
if per_row.empty:
    st.info("No re-run results yet. Re-run rows from their page, or in bulk with `python -m runner bulk`.")
    st.stop()
widgets.linked_table(per_row, key="runs_rows", target="row", id_column="row_id", param="row")
st.subheader("Per problem")
per_problem = api.runs_by_problem(store, cfg.runs_dir, f).to_pandas()
widgets.linked_table(per_problem, key="runs_problems", target="problem", id_column="problem_key", param="problem")
st.subheader("Static check vs measured verdict")
st.caption("Rows per (error found at ingest without running, latest measured verdict): what static checks catch.")
st.dataframe(api.runs_static_vs_measured(store, cfg.runs_dir, f).to_pandas(), hide_index=True)
st.subheader("Reproducibility")
st.caption("Rows timed more than once: spread of their measured medians (cv = std / mean across runs).")
repeated = api.runs_reproducibility(store, cfg.runs_dir, f).to_pandas()
if repeated.empty:
    st.caption("No row has been timed twice yet (`python -m runner bulk --repeats 3` does that).")
else:
    widgets.linked_table(repeated, key="runs_repro", target="row", id_column="row_id", param="row")
links.copy_link("runs", split=split)
