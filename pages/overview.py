"""Overview page: the store in numbers, the label distribution, failure rates and error types."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from queries.filters import Filters
from ui import charts, context, data, flags, links, widgets
from ui.labels import error_name

cfg = context.settings()
info = context.current_store(cfg)
st.title("Triton GPU Latency Explorer")
st.caption("Programs pairing a PyTorch reference `Model` with a Triton candidate `ModelNew`, and the candidate's "
           f"measured runtime (the label, shown in {cfg.label_unit}; compare it within a problem, not across).")

split = widgets.choice("Split", ["train", "test"], "split", key="overview_split", container=st.sidebar)
flag = flags.flag_choice("overview_flag", container=st.sidebar)
f = Filters(split=split, flag=flag)
ov = data.overview(info, cfg, f)
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
    if totals["non_finite_label_rows"]:
        st.caption(charts.non_finite_note(totals["non_finite_label_rows"]))
with right:
    groups = ov.groups.to_pylist()
    by_split: dict[str, list[int]] = {}
    for g in groups:
        rows_failed = by_split.setdefault(g["split"], [0, 0])
        rows_failed[0] += g["rows"]
        rows_failed[1] += g["failed_rows"]
    charts.show(charts.rate_bars(list(by_split), [f / n for n, f in by_split.values()], [n for n, _ in by_split.values()],
                                 "Failure rate by split"), key="overview_split_rates")
    held = [g for g in groups if g["split"] == "test" and g["holdout_group"]]  # train rows carry groups too
    if held:
        charts.show(charts.rate_bars([g["holdout_group"] for g in held], [g["failure_rate"] for g in held],
                                     [g["rows"] for g in held], "Failure rate by holdout group (test)"),
                    key="overview_holdout_rates")

st.subheader("Flags")
unchecked = totals["static_unchecked_rows"]
st.caption(f"{totals['flagged_rows']:,} rows carry a flag that keeps them out of the rankings by default"
           + (f"; the static hack checks have not run on {unchecked:,} rows (not checked, never passed)"
              if unchecked else "") + ".")
flags.flag_counts_table(api.flag_counts(info.path, cfg, f))

errors = api.failures(info.path, cfg, f).to_pylist()
if errors:
    charts.show(charts.count_bars([error_name(e["error_type"]) for e in errors], [e["rows"] for e in errors],
                                  "Failed rows by cause (latest GPU run, else CPU triage, else static finding)",
                                  [e["basis"] for e in errors]), key="overview_errors")
    st.page_link(links.page_file("failures"), label="Explore failures", icon=":material/arrow_forward:",
                 query_params={k: v for k, v in (("split", split), ("flag", flag)) if v} or None)
links.copy_link("overview", split=split, flag=flag)
