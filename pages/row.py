"""Kernel/row page: one program's metadata, reference vs candidate diff, kernels, full text, neighbours, re-run."""

from __future__ import annotations

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries import api
from ui import code, context, links, rerun, widgets

cfg = context.settings()
store = context.store_path()

row_id = widgets.text_param("Row id", "row", key="row_id", placeholder="e.g. train/000123", container=st.sidebar)
if not row_id:
    st.title("Kernel")
    st.info("Open a row from a problem's leaderboard, the failures or the search page, or type a row id in the sidebar.")
    st.stop()

detail = api.row(store, row_id)
if detail is None:
    st.title("Kernel")
    st.error(f"No row `{row_id}` in this store. Row ids look like `train/000123` or `test/000045`.")
    st.stop()

meta, parsed = detail.meta, detail.parsed
st.title(meta.get("title") or row_id)
st.caption(f"row `{row_id}` · problem `{meta.get('problem_key')}`")

nav = st.columns([1, 1, 1, 3])
if meta.get("problem_key"):
    nav[0].page_link(links.page_file("problem"), label="Problem", icon=":material/arrow_upward:",
                     query_params={"problem": meta["problem_key"]})
if detail.prev_id:
    nav[1].page_link(links.page_file("row"), label="Faster", icon=":material/arrow_back:",
                     query_params={"row": detail.prev_id}, help=f"previous in the problem's ranking: {detail.prev_id}")
if detail.next_id:
    nav[2].page_link(links.page_file("row"), label="Slower", icon=":material/arrow_forward:",
                     query_params={"row": detail.next_id}, help=f"next in the problem's ranking: {detail.next_id}")

label = meta.get("y")
cols = st.columns(5)
cols[0].metric(f"label ({cfg.label_unit})", widgets.fmt_label(label, "").strip())
cols[1].metric("static check", meta.get("static_error") or "—")
cols[2].metric("kernels", meta.get("n_kernels", len(parsed.kernels)))
cols[3].metric("split", meta.get("split") or "—")
cols[4].metric("characters", f"{meta.get('n_chars') or len(detail.program):,}")
with st.expander("All metadata"):
    st.json({k: (v if not hasattr(v, "tolist") else v.tolist()) for k, v in meta.items()}, expanded=True)

tab_diff, tab_kernels, tab_program = st.tabs(["Model vs ModelNew", f"Triton kernels ({len(parsed.kernels)})", "Whole program"])
with tab_diff:
    if parsed.mode == "text":
        st.caption("The program does not parse: reference and candidate were split on text (first `import triton`).")
    code.show_diff(parsed.reference, parsed.candidate)
with tab_kernels:
    if not parsed.kernels:
        st.info("No `@triton.jit` kernel found in this program.")
    for kernel in parsed.kernels:
        st.markdown(f"**`{kernel.name}`** · line {kernel.lineno}" + (" · autotuned" if kernel.autotuned else ""))
        st.code(kernel.source, language="python", line_numbers=True)
with tab_program:
    safe_name = row_id.replace("/", "_")
    st.download_button("Download program", detail.program, file_name=f"{safe_name}.py", mime="text/x-python")
    st.code(detail.program, language="python", line_numbers=True)

rerun.rerun_panel(row_id, label, cfg)
links.copy_link("row", row=row_id)
