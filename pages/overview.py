"""Overview page: the store in numbers, the label distribution, failure rates and error types."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import charts, context, data, links, widgets
from ui.labels import error_name

cfg = context.settings()
info = context.current_store(cfg)
st.title("Triton GPU Latency Explorer")
st.caption("Programs pairing a PyTorch reference `Model` with a Triton candidate `ModelNew`, and the candidate's "
           f"measured runtime (the label, shown in {cfg.label_unit}; compare it within a problem, not across).")

split = widgets.choice("Split", ["train", "test"], "split", key="overview_split", container=st.sidebar)
ov = data.overview(info, Filters(split=split))
totals = ov.totals

cols = st.columns(6)
cols[0].metric("programs", f"{totals['rows']:,}")
cols[1].metric("problems", f"{totals['problems']:,}")
cols[2].metric("distinct candidates", f"{totals['distinct_candidates']:,}")
cols[3].metric("with a label", f"{totals['ok_rows']:,}")
rate = totals["failure_rate"]
cols[4].metric("failure rate", "—" if rate is None else f"{rate:.1%}")
mean_kernels = totals["mean_kernels"]
cols[5].metric("kernels per program", "—" if mean_kernels is None else f"{mean_kernels:.2f}")

if not totals["rows"]:
    st.info("This store holds no rows. Build one with `python -m queries ingest SOURCE... --store DIR`.")
    st.stop()

left, right = st.columns([3, 2])
with left:
    charts.show(charts.log_histogram(ov.y_histogram, cfg.label_unit), key="overview_histogram")
    charts.show(charts.quantile_curve(ov.y_quantiles, cfg.label_unit), key="overview_quantiles")
    st.caption("Labels mix problems of very different sizes, so most of this spread is between problems: "
               "open a problem for a meaningful distribution.")
with right:
    groups = ov.groups.to_pandas()
    by_split = groups.groupby("split", as_index=False)[["rows", "failed_rows"]].sum()
    charts.show(charts.rate_bars(by_split["split"], by_split["failed_rows"] / by_split["rows"], by_split["rows"],
                                 "Failure rate by split"), key="overview_split_rates")
    held = groups[(groups["split"] == "test") & groups["holdout_group"].notna()]  # train rows carry groups too
    if not held.empty:
        charts.show(charts.rate_bars(held["holdout_group"], held["failure_rate"], held["rows"],
                                     "Failure rate by holdout group (test)"), key="overview_holdout_rates")

errors = api.failures(info.path, Filters(split=split)).to_pandas()
if not errors.empty:
    charts.show(charts.count_bars(errors["error_type"].map(error_name), errors["rows"],
                                  "Failed rows by cause (latest re-run, else static finding)", errors["source"]),
                key="overview_errors")
    st.page_link(links.page_file("failures"), label="Explore failures", icon=":material/arrow_forward:",
                 query_params={"split": split} if split else None)
links.copy_link("overview", split=split)
