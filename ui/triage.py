"""A row's latest CPU triage on the Kernel page (`python -m runner triage`, design §3), labelled as a triage: what
a CPU saw when it imported the program, built the models on meta tensors and compiled each Triton launch for a
target without running anything. Never presented as a measurement."""

from __future__ import annotations

import streamlit as st

from ui.labels import error_name
from ui.text import md, md_code

MEANING = ("A CPU triage imports the program, builds `Model` and `ModelNew` and their inputs on torch's meta device "
           "(shapes and dtypes, no data), calls both forwards with every Triton launch compiled for the target but "
           "not run, and compares output structure, shapes and dtypes. *passed* means \"compiles and shapes match: "
           "the rest needs a GPU\". It is not a measurement; import errors depend on the torch version.")
PHASES = (("import", "import_s"), ("build", "build_s"), ("compile", "compile_s"), ("compare", "compare_s"))


def headline(triage: dict) -> str:
    """The verdict in words: `passed`, `failed: compile error`, `not triaged`."""
    status = triage.get("triage_status")
    if status == "failed":
        return f"failed: {error_name(triage.get('error_type')) if triage.get('error_type') else 'cause unknown'}"
    return "passed" if status == "passed" else "not triaged"


def show_triage(triage: dict | None) -> None:
    """The latest triage of a row (`queries.api.row(...).latest_triage`), or a line saying there is none."""
    if triage is None:
        st.caption("No CPU triage result for this row (`python -m runner triage` writes them).")
        return
    status = triage.get("triage_status")
    box = {"passed": st.success, "failed": st.error}.get(status, st.info)
    where = f"{md(triage.get('basis'))}, at {md(triage.get('triaged_at') or '(time unknown)')}, from " \
            f"{md_code(triage.get('triage_file'))}"
    box(f"CPU triage: {md(headline(triage))}  \n{where}")
    details = [f"{name} {md_code(triage[key])}" for name, key in
               (("kernel", "kernel"), ("missing module", "module"), ("stage", "stage"), ("exception", "exception"))
               if triage.get(key)]
    versions = [f"{name} {md_code(triage[name])}" for name in ("torch", "triton", "python") if triage.get(name)]
    details.append(f"target {md_code(triage.get('target') or 'unknown')}")
    st.caption(" · ".join(details + versions))
    if status == "not_triaged" and triage.get("reason"):
        st.caption(f"why not: {md(triage['reason'])}")
    if triage.get("message"):
        st.code(triage["message"], language=None, wrap_lines=True)  # program text: shown as text
    phases = [f"{name} {triage[key]:.2f} s" for name, key in PHASES if isinstance(triage.get(key), float)]
    hits, misses = triage.get("cache_hits"), triage.get("cache_misses")
    if isinstance(hits, int) and isinstance(misses, int):
        phases.append(f"compile cache {hits} hits / {misses} misses")
    st.caption(" · ".join(phases + [MEANING]) if phases else MEANING)
