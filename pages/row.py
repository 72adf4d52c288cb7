"""Kernel/row page: one program's latest verdict with the Re-run controls on top, its run history, its latest CPU
triage, metadata, the reference vs candidate diff, kernels, the full text and its neighbours in the problem's
ranking."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import code, context, findings, flags, links, near_dups, rerun, triage, verdict, widgets
from ui.labels import error_name, flags_text
from ui.text import md, md_code

cfg = context.settings()
store = context.store_path()

row_id = widgets.text_param("Row id", "row", key="row_id", placeholder="e.g. train/000123", container=st.sidebar)
if not row_id:
    st.title("Kernel")
    st.info("Open a row from a problem's leaderboard, the failures or the search page, or type a row id in the sidebar.")
    st.stop()

detail = api.row(store, cfg, row_id)
if detail is None:
    st.title("Kernel")
    st.error(f"No row {md_code(row_id)} in this store. Row ids look like `train/000123` or `test/000045`.")
    st.stop()

meta, parsed = detail.meta, detail.parsed
st.title(md(meta.get("title") or row_id))
st.caption(f"row {md_code(row_id)} · problem {md_code(meta.get('problem_key'))}")

nav = st.container(horizontal=True)  # each link as wide as its label (columns cut them at 1000 px)
if meta.get("problem_key"):
    nav.page_link(links.page_file("problem"), label="Problem", icon=":material/arrow_upward:",
                     query_params={"problem": meta["problem_key"]})
if detail.prev_id:
    nav.page_link(links.page_file("row"), label="Faster", icon=":material/arrow_back:",
                     query_params={"row": detail.prev_id}, help=f"previous in the problem's ranking: {md(detail.prev_id)}")
if detail.next_id:
    nav.page_link(links.page_file("row"), label="Slower", icon=":material/arrow_forward:",
                     query_params={"row": detail.next_id}, help=f"next in the problem's ranking: {md(detail.next_id)}")

label = meta.get("y")
cols = st.columns(4)
cols[0].metric(f"label ({cfg.label_unit})", widgets.fmt_label(label, "").strip())
cols[1].metric("kernels", meta.get("n_kernels", len(parsed.kernels)))
cols[2].metric("split", meta.get("split") or "—")
cols[3].metric("characters", f"{meta.get('n_chars') or len(detail.program):,}")
static_flags = meta.get("static_flags")
st.caption(f"static check (ingest, nothing run): **{md(error_name(meta.get('static_error')))}** · static hack "
           f"flags: **{flags_text(None if static_flags is None else list(static_flags))}**")
if not detail.program_error:
    findings.show(meta.get("static_error"), detail.program, label)
if static_flags is not None and len(static_flags):
    flags.legend(list(static_flags), "What the static flags mean")

st.subheader("Latest verdict")
fresh = rerun.rerun_panel(row_id, cfg)
history = detail.runs.to_pandas()
if fresh is not None:
    verdict.show_latest(fresh, label, cfg.label_unit, f"job {md_code(fresh['job_id'])}, just finished")
elif (latest := detail.latest_run) is not None:
    verdict.show_latest(latest, label, cfg.label_unit, f"finished {md(latest.get('finished_at') or '(time unknown)')}, "
                        f"from {md_code(latest.get('results_file'))}")
else:
    st.caption("Never re-run: no run result for this row yet" + ("." if cfg.read_only else " (use Re-run above)."))
if not history.empty:
    with st.expander(f"Run history ({len(history)})", expanded=len(history) > 1):
        verdict.show_history(history)

near_dups.row_near_copies(store, cfg, row_id, meta.get("near_dup_cluster"), key="row_near_copies")

st.subheader("CPU triage")
triage.show_triage(detail.latest_triage)

with st.expander("All metadata"):
    st.json({k: (v if not hasattr(v, "tolist") else v.tolist()) for k, v in meta.items()}, expanded=True)

if detail.program_error:
    st.error(f"The program text of {md_code(row_id)} cannot be read from the store: {md(detail.program_error)}. Its index "
             "row, label and runs above still hold; rebuild the store (`python -m queries ingest ...`) to read "
             "the code again.")
    links.copy_link("row", row=row_id)
    st.stop()

TABS = {"diff": "Model vs ModelNew", "kernels": f"Triton kernels ({len(parsed.kernels)})", "program": "Whole program"}
tab = links.param("tab") if links.param("tab") in TABS else "diff"
# The URL picks the tab when it changed outside the tabs (a fresh load, a link); a click on a tab wins otherwise.
# No `default=`: Streamlit counts it in the widget's identity, so a default following the URL made a new widget
# after the first switch, which kept showing the tab the URL had named (issue 46).
if st.session_state.get("row_tab_url") != (row_id, tab) or st.session_state.get("row_tab") not in TABS.values():
    st.session_state["row_tab"] = TABS[tab]
tab_diff, tab_kernels, tab_program = st.tabs(list(TABS.values()), key="row_tab", on_change="rerun")
tab = {label: name for name, label in TABS.items()}.get(st.session_state.get("row_tab"), tab)
st.session_state["row_tab_url"] = (row_id, tab)
links.sync_params(tab=None if tab == "diff" else tab)
with tab_diff:
    view_params = code.diff_view(parsed, key=f"diff::{row_id}")
with tab_kernels:
    if not parsed.kernels:
        st.info("No `@triton.jit` kernel found in this program.")
    for kernel in parsed.kernels:
        st.markdown(f"**{md_code(kernel.name)}** · line {kernel.lineno}" + (" · autotuned" if kernel.autotuned else ""))
        st.code(kernel.source, language="python", line_numbers=True)
with tab_program:
    safe_name = row_id.replace("/", "_")
    st.download_button("Download program", detail.program, file_name=f"{safe_name}.py", mime="text/x-python")
    st.code(detail.program, language="python", line_numbers=True)

links.copy_link("row", row=row_id, tab=None if tab == "diff" else tab, **view_params)
