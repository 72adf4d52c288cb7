"""Two candidates side by side (the Compare page): their facts in one table, the ratio of their times, and the
picker that opens a comparison from a problem's leaderboard."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from common.hardware import CPU_LABEL
from ui import links, verdict
from ui.labels import error_name


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _num(value, fmt: str, suffix: str = "") -> str:
    return f"{value:{fmt}}{suffix}" if _present(value) else "—"


def latest_run(detail, fresh: dict | None = None) -> dict | None:
    """The run a comparison shows: one just finished in this session, else the newest in the results log."""
    if fresh is not None:
        return fresh
    return detail.runs.slice(0, 1).to_pylist()[0] if detail.runs.num_rows else None


def timed_run(detail, run: dict | None) -> dict | None:
    """The run whose timing a comparison shows: `run`, unless it ran on the CPU interpreter (a correctness check
    that times nothing), then the row's newest GPU run (None without one): an interpreter run never replaces it."""
    if run is None or run.get("device") != CPU_LABEL:
        return run
    return next((r for r in detail.runs.to_pylist() if r.get("device") != CPU_LABEL), None)


def verdict_text(run: dict | None) -> str:
    if run is None:
        return "never re-run"
    text = "correct" if run.get("status") == "ok" else f"failed: {error_name(run.get('error_type') or 'unknown')}"
    return f"{text} (CPU interpreter check)" if run.get("device") == CPU_LABEL else text


def facts(detail, run: dict | None, unit: str) -> dict[str, str]:
    """What a reader compares about one candidate, as text (both columns of the table share the names): the
    latest verdict from `run`, the times from `timed_run`."""
    meta = detail.meta
    timed = timed_run(detail, run) or {}
    run = run or {}
    return {  # the times first: what a comparison is for
        "row": str(meta.get("id")),
        f"label ({unit})": _num(meta.get("y"), ".4g"),
        "latest verdict": verdict_text(run or None),
        "GPU / device": str(timed.get("gpu") or timed.get("device") or "—"),
        "ModelNew median": _num(timed.get("median_ms"), ".4g", " ms"),
        "ModelNew spread": verdict.spread(timed) or "—",
        "Model (eager) median": _num(timed.get("ref_median_ms"), ".4g", " ms"),
        "speedup vs reference": _num(timed.get("speedup"), ".3g", "×"),
        "profile": str(timed.get("profile") or "—"),
        "finished": str(run.get("finished_at") or "—"),
        "problem": str(meta.get("title") or meta.get("problem_key")),
        "kernels": str(meta.get("n_kernels", len(detail.parsed.kernels))),
        "kernel names": ", ".join(k.name for k in detail.parsed.kernels) or "—",
        "autotuned": "yes" if meta.get("autotuned") else "no",
        "candidate (chars)": _num(meta.get("cand_chars"), ",d"),
        "static finding": error_name(meta.get("static_error")),
    }


def facts_frame(a: dict[str, str], b: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"": list(a), "A": list(a.values()), "B": [b[k] for k in a]})


def ratios(a_meta: dict, b_meta: dict, a_run: dict | None, b_run: dict | None) -> list[str]:
    """B against A: label ratio, and measured ratio where both have a median: same-job when one pair job timed both
    (back to back on one GPU under one profile), else separate jobs (on a different GPU or profile, said so)."""
    notes = []
    ya, yb = a_meta.get("y"), b_meta.get("y")
    if _present(ya) and _present(yb) and ya > 0:
        notes.append(f"label: B takes {yb / ya:.3g}× A's time")
    ma, mb = (a_run or {}).get("median_ms"), (b_run or {}).get("median_ms")
    if _present(ma) and _present(mb) and ma > 0:
        same = a_run.get("gpu") == b_run.get("gpu") and a_run.get("profile") == b_run.get("profile")
        one_job = a_run.get("pair_job") is not None and a_run.get("pair_job") == b_run.get("pair_job")
        how = ("same job: back to back on one GPU, one profile" if one_job else
               "separate jobs" if same else "separate jobs, different GPU or profile")
        notes.append(f"measured: B takes {mb / ma:.3g}× A's time ({how})")
    return notes


def compare_picker(ids: list[str], *, key: str) -> None:
    """Two selectboxes over a leaderboard's rows and a link to their comparison (the leaderboard's own selection
    opens one row)."""
    if len(ids) < 2:
        return
    with st.expander("Compare two candidates"):
        cols = st.columns([2, 2, 1])
        a = cols[0].selectbox("A", ids, index=0, key=f"{key}::a")
        b = cols[1].selectbox("B", ids, index=1, key=f"{key}::b")
        cols[2].page_link(links.page_file("compare"), label="Compare", icon=":material/compare_arrows:",
                          query_params={"a": a, "b": b}, disabled=a == b)
