"""Failures page: error types (static, CPU triage and measured) by problem, split and holdout group, with example
rows."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from common.checks import STATIC_ERRORS
from common.outcomes import ErrorType
from common.triage_log import TRIAGE_ERROR_TYPES, TRIAGE_FILTER_STATUSES
from queries import api
from queries.filters import ERROR_SOURCES, Filters
from ui import bulk, charts, context, data, flags, links, widgets
from ui.labels import error_name
from ui.text import md_code

cfg = context.settings()
info = context.current_store(cfg)
store = info.path
st.title("Failures")
st.caption("A row failed when its label is empty (the dataset's own measurement failed) or its latest re-run failed. "
           "Each failed row is counted once, by its most trusted cause: the latest measured verdict where it was "
           "re-run on a GPU, else its latest CPU triage where that passed or failed (`python -m runner triage`: "
           "import, build on meta tensors, compile every Triton launch for a target, nothing run; a triage is not a "
           "measurement), else what ingest found without running it (text rules and a compile; \"no static "
           "finding\" = nothing). **rests on** says which source each count comes from.")
syntax_check = info.meta.syntax_check  # absent in stores whose ingest parsed every program at once
if syntax_check is not None and not syntax_check.get("done"):
    st.warning("Syntax errors are not marked in this store yet: its ingest stopped before the syntax check. "
               f"Run {md_code(f'python -m queries check-syntax --store {store}')}.")

with st.sidebar:
    split = widgets.choice("Split", ["train", "test"], "split", key="fail_split")
    holdouts = data.holdout_groups(info, cfg)
    holdout = widgets.choice("Holdout group", list(holdouts), "holdout", key="fail_holdout")
    problem = widgets.text_param("Problem key", "problem", key="fail_problem", placeholder="16 hex digits")
    source = widgets.choice("Error source", list(ERROR_SOURCES), "source", key="fail_source", closed=True)
    level = flags.level_choice("fail_level")
    flag = flags.flag_choice("fail_flag")
    triage = widgets.choice("CPU triage", list(TRIAGE_FILTER_STATUSES), "triage", key="fail_triage", closed=True,
                            format_func=lambda v: v.replace("_", " "))
    triage_error = widgets.choice("Triage error type", list(TRIAGE_ERROR_TYPES), "triage_error",
                                  key="fail_triage_error", closed=True)

base = Filters(split=split, holdout_group=holdout, problem_key=problem or None, error_source=source, level=level,
               flag=flag, triage_status=triage, triage_error=triage_error)
counts = api.failures(store, cfg, base).to_pandas()
known = [*STATIC_ERRORS, *(e.value for e in ErrorType if e is not ErrorType.OK)]
types = list(dict.fromkeys([*counts["error_type"].dropna().tolist(), *known])) if not counts.empty else known
if links.param("error") not in (None, *types):
    st.warning(f"The link names no known error type ({md_code(links.param('error'))}): showing every type.")
error_type = widgets.choice("Error type", types, "error", key="fail_error", container=st.sidebar,
                            format_func=error_name, closed=True)
f = replace(base, error_type=error_type)

if counts.empty:
    st.info("No failures match these filters.")
else:
    counts.insert(0, "cause", counts["error_type"].map(error_name))
    left, right = st.columns([3, 2])
    with left:  # narrow columns, so "share" stays in view at 1400 px
        shown = counts.drop(columns=["error_type", "source"])
        st.dataframe(shown, hide_index=True, key="failure_counts", column_config={
            "cause": st.column_config.TextColumn("cause", width=150),
            "basis": st.column_config.TextColumn("rests on", width=150),
            "rows": st.column_config.NumberColumn("failed rows", format="%d", width=80),
            "problems": st.column_config.NumberColumn(format="%d", width=75),
            "share": st.column_config.NumberColumn("share", format="percent", width=65,
                                                   help="share of the failed rows"),
        })
    with right:
        charts.show(charts.count_bars(counts["cause"], counts["rows"], "Failed rows by cause", counts["basis"]),
                    key="failure_bars")
    flags.legend(counts.loc[counts["source"] == "static", "error_type"], "What the static causes mean")
bulk.bulk_panel(api.unmeasured_failures(store, cfg, f), f, info, cfg, key="fail_bulk")

st.subheader("Flags of the failed rows")
flags.flag_counts_table(api.flag_counts(store, cfg, replace(f, status="failed")))

st.subheader("Example rows" + (f" with {md_code(error_name(error_type))}" if error_type else ""))
examples = api.failure_examples(store, cfg, f, limit=50).to_pandas()
widgets.linked_table(examples, key="failure_examples", target="row", id_column="id", param="row")
links.copy_link("failures", split=split, holdout=holdout, problem=problem, source=source, error=error_type,
                level=level, flag=flag, triage=triage, triage_error=triage_error)
