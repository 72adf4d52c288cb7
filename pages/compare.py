"""Compare page (`?a=ID&b=ID`): two candidates of one problem, their facts side by side (labels, kernels, latest
verdicts, measured times, speedups), a "Re-run both" that times the two in one pair job of the runner (same GPU,
same profile, back to back), and their ModelNews as a diff."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import code, compare, context, links, rerun_pair, widgets
from ui.text import md, md_code

cfg = context.settings()
store = context.store_path()
st.title("Compare two candidates")

with st.sidebar:
    a_id = widgets.text_param("Row A", "a", key="compare_a", placeholder="e.g. train/000123")
    b_id = widgets.text_param("Row B", "b", key="compare_b", placeholder="e.g. train/000456")
if not a_id or not b_id:
    st.info("Pick two rows: open a problem and use **Compare two candidates** under its leaderboard, or give both "
            "row ids in the sidebar (the link is `compare?a=ID&b=ID`).")
    st.stop()

details = {side: api.row(store, cfg, row_id) for side, row_id in (("A", a_id), ("B", b_id))}
missing = [f"{side} ({md_code(row_id)})" for (side, detail), row_id in zip(details.items(), (a_id, b_id), strict=True)
           if detail is None]
if missing:
    st.error(f"No such row in this store: {', '.join(missing)}. Row ids look like `train/000123`.")
    st.stop()
a, b = details["A"], details["B"]
if a.meta.get("problem_key") != b.meta.get("problem_key"):
    st.warning("These rows belong to different problems: their labels and times do not compare (a latency means "
               "something only within its problem).")
else:
    st.page_link(links.page_file("problem"), label=md(a.meta.get("title") or a.meta["problem_key"]),
                 icon=":material/arrow_upward:", query_params={"problem": a.meta["problem_key"]})

fresh = rerun_pair.rerun_both_panel(a_id, b_id, cfg)
runs = {"A": compare.latest_run(a, fresh.get("A")), "B": compare.latest_run(b, fresh.get("B"))}
table = compare.facts_frame(compare.facts(a, runs["A"], cfg.label_unit), compare.facts(b, runs["B"], cfg.label_unit))
st.dataframe(table, hide_index=True, key="compare_facts", height="content", column_config={  # every row, no scroll box
    "": st.column_config.TextColumn("", width="medium"),
    "A": st.column_config.TextColumn(f"A · {a_id}"), "B": st.column_config.TextColumn(f"B · {b_id}")})
notes = compare.ratios(a.meta, b.meta, compare.timed_run(a, runs["A"]), compare.timed_run(b, runs["B"]))
if fresh:
    notes.append("measured: this session's Re-run both")
if notes:
    st.caption(" · ".join(notes))

st.subheader("ModelNew A vs ModelNew B")
view_params = code.diff_panel(a.parsed.candidate, b.parsed.candidate, f"A: {a_id} (ModelNew)",
                              f"B: {b_id} (ModelNew)", key=f"compare_diff::{a_id}::{b_id}")
st.subheader("Kernels")
for column, (side, detail) in zip(st.columns(2), details.items(), strict=True):
    with column:
        if not detail.parsed.kernels:
            st.info(f"{side}: no `@triton.jit` kernel.")
        for kernel in detail.parsed.kernels:
            st.markdown(f"**{side}** · **{md_code(kernel.name)}** · line {kernel.lineno}"
                        + (" · autotuned" if kernel.autotuned else ""))
            st.code(kernel.source, language="python", line_numbers=True)
links.copy_link("compare", a=a_id, b=b_id, **view_params)
