"""A row's run results on the Kernel page: the latest verdict (status, error with trimmed traceback, measured ms,
GPU, profile) and the history of every run. Both read flat run rows (`queries.results.RUNS_SCHEMA`), so a verdict
fresh from the runner and one read back from the results log look the same."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from common.hardware import CPU_LABEL
from ui import flags as flag_ui
from ui.labels import error_name, flag_label
from ui.text import md

TOLERANCE_NOTE = "tightest standard tolerance (atol = rtol) that every output passed on every trial"


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _ms(value: float | None) -> str:
    return f"{value:.4g} ms" if _present(value) else "—"


def spread(run: dict) -> str | None:
    """The timing's spread as the method records it: p10–p90 of the timed calls (min–max where a result from an
    older runner has no percentiles), never ± a standard deviation, which one outlier inflates."""
    n = f" over {run['timing_n']:,} calls" if _present(run.get("timing_n")) else ""
    for lo, hi, name in (("p10_ms", "p90_ms", "p10–p90"), ("min_ms", "max_ms", "min–max")):
        if _present(run.get(lo)) and _present(run.get(hi)):
            return f"{name} {run[lo]:.4g}–{run[hi]:.4g} ms{n}"
    return None


def headline(run: dict) -> str:
    """`correct` or `failed: <error type>`, with where and under which profile."""
    ok = run.get("status") == "ok"
    text = "correct" if ok else f"failed: {md(error_name(run.get('error_type') or 'unknown'))}"
    where = [str(v) for v in (run.get("gpu") or run.get("device"), run.get("profile")) if v]
    return f"**{text}**" + (f" · {md(' · '.join(where))}" if where else "")


def show_latest(run: dict, label_y: float | None, unit: str, source: str) -> None:
    """The latest verdict of a row; `source` says where it comes from (a job just finished, or the log)."""
    ok = run.get("status") == "ok"
    (st.success if ok else st.error)(f"Latest verdict: {headline(run)}  \n{source}")
    cols = st.columns(4)
    trials = run.get("trials")
    cols[0].metric("correct trials", f"{run.get('correct_trials') if _present(run.get('correct_trials')) else '—'}"
                   f" / {trials if _present(trials) else '—'}")
    cols[1].metric("ModelNew median", _ms(run.get("median_ms")), help=spread(run))
    cols[2].metric("Model (eager) median", _ms(run.get("ref_median_ms")))
    speedup = run.get("speedup")
    cols[3].metric("speedup vs reference", f"{speedup:.3g}×" if _present(speedup) else "—")
    notes = [f"ModelNew {spread(run)}"] if spread(run) else []
    median = run.get("median_ms")
    if run.get("launches_checked") is True and _present(run.get("triton_share")):
        notes.append(f"Triton share of GPU time {run['triton_share']:.0%}")
    elif run.get("device") is not None:
        notes.append("Triton share: not checked")
    if _present(median) and _present(label_y) and label_y > 0:
        notes.append(f"measured / label = {median / label_y:.3g} (measured in ms; the label is taken as {unit})")
    if _present(run.get("tolerance_passed")):
        notes.append(f"correct at {run['tolerance_passed']:g} ({TOLERANCE_NOTE})")
    elif _present(run.get("max_abs_diff")):
        notes.append(f"max abs diff {run['max_abs_diff']:.3g} · max rel diff {run.get('max_rel_diff') or 0:.3g}")
    if run.get("device") == CPU_LABEL:
        notes.append("ran in the Triton CPU interpreter: correctness only, no timing")
    if notes:
        st.caption(" · ".join(notes))
    flags = list(run.get("flags") or [])
    if flags:
        # labels only: a flag's value can hold text the program chose, which markdown would render; the legend's
        # table shows the values as plain text
        st.warning("Flags: " + ", ".join(dict.fromkeys(flag_label(str(f).split(":", 1)[0]) for f in flags)))
        flag_ui.legend(flags)
    if "launch_bound" in flags:
        st.info("Launch-bound: the host needs about as long to launch this call as the GPU needs to run it, so the "
                "GPU waits for Python between kernels and this timing follows host load from run to run.")
    if not ok:
        st.markdown(f"**{md(run.get('exception') or 'error')}**")  # program text: shown as text
        if run.get("message"):
            st.code(run["message"], language=None, wrap_lines=True)
        if run.get("traceback"):
            st.code(run["traceback"], language=None)


def history_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run of the row, newest first, with the columns a reader compares."""
    columns = ["finished_at", "status", "error_type", "median_ms", "p10_ms", "p90_ms", "ref_median_ms", "speedup",
               "tolerance_passed", "profile", "gpu", "device", "duration_s", "result_id"]
    frame = runs[[c for c in columns if c in runs.columns]].copy()
    frame["error_type"] = frame["error_type"].map(lambda v: error_name(v) if isinstance(v, str) else None)
    return frame


HISTORY_COLUMNS = {
    "finished_at": st.column_config.TextColumn("finished (UTC)"),
    "error_type": st.column_config.TextColumn("error"),
    "median_ms": st.column_config.NumberColumn("ModelNew median (ms)", format="%.4g"),
    "p10_ms": st.column_config.NumberColumn("p10 (ms)", format="%.4g"),
    "p90_ms": st.column_config.NumberColumn("p90 (ms)", format="%.4g"),
    "ref_median_ms": st.column_config.NumberColumn("Model median (ms)", format="%.4g"),
    "speedup": st.column_config.NumberColumn("speedup vs reference", format="%.3g×"),
    "tolerance_passed": st.column_config.NumberColumn("correct at", format="%g"),
    "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
}


def show_history(runs: pd.DataFrame) -> None:
    st.dataframe(history_frame(runs), hide_index=True, key="row_history", column_config=HISTORY_COLUMNS)
