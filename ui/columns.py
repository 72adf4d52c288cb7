"""How every table shows its columns: names with units, number formats, hashes hidden, the title and the
metrics a reader compares first. `linked_table` applies these; a page's own `column_config` wins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    import pandas as pd

HIDDEN = ("problem_key", "candidate_key", "result_id", "program_sha256", "code_shard", "code_rg", "results_file",
          "line", "method")
FIRST = ("title", "rank", "row_id", "id", "status", "error_type", "speedup_vs_reference", "verified")


def standard(label_unit: str) -> dict:
    """Column configs by column name, for any table of the explorer."""
    def n(label: str, fmt: str = "%d") -> st.column_config.NumberColumn:
        return st.column_config.NumberColumn(label, format=fmt)

    configs = {name: None for name in HIDDEN}
    configs |= {
        "title": st.column_config.TextColumn("problem", width="medium"),
        "id": st.column_config.TextColumn("row"),
        "row_id": st.column_config.TextColumn("row"),
        "problem_id": st.column_config.TextColumn("test id"),
        "holdout_group": st.column_config.TextColumn("holdout group"),
        "y": n(f"label ({label_unit})", "%.4g"),
        "n_kernels": n("kernels"),
        "n_chars": n("program (chars)"),
        "ref_chars": n("reference (chars)"),
        "cand_chars": n("candidate (chars)"),
        "share": n("share", "percent"),
        "failure_rate": n("failure rate", "percent"),
        "cv": n("cv (std / mean)", "percent"),
        "ratio": n("measured / label", "%.3g"),
        "ratio_min": n("ratio min", "%.3g"),
        "ratio_median": n("ratio median", "%.3g"),
        "ratio_max": n("ratio max", "%.3g"),
        "median_ms": n("measured median (ms)", "%.4g"),
        "std_ms": n("std (ms)", "%.2g"),
        "p10_ms": n("p10 (ms)", "%.4g"),
        "p90_ms": n("p90 (ms)", "%.4g"),
        "ref_median_ms": n("Model median (ms)", "%.4g"),
        "median_ms_min": n("median min (ms)", "%.4g"),
        "median_ms_median": n("median of medians (ms)", "%.4g"),
        "median_ms_max": n("median max (ms)", "%.4g"),
        "speedup": n("speedup vs reference", "%.3g×"),
        "timing_n": n("timed calls"),
        "rows_run": n("rows re-run"),
        "measured_ok": n("re-run correct"),
        "rows_with_ratio": n("rows with a ratio"),
        "label_ok_measured_failed": n("label, re-run failed"),
        "label_failed_measured_ok": n("no label, re-run correct"),
        "runs": n("runs"),
        "line": None,
        "static_error": st.column_config.TextColumn("static finding"),
        "error_type": st.column_config.TextColumn("error"),
        "message": st.column_config.TextColumn("message", width="large"),
        "gpu": st.column_config.TextColumn("GPU"),
        "measured_error": st.column_config.TextColumn("measured error"),
        "measured_message": st.column_config.TextColumn("measured message", width="large"),
        "cause": st.column_config.TextColumn("cause", help="the most trusted cause: the latest GPU run, else the "
                                             "latest CPU triage, else the static finding"),
        "basis": st.column_config.TextColumn("rests on"),
        "triage_error": st.column_config.TextColumn("triage error (CPU)"),
        "triage_message": st.column_config.TextColumn("triage message (CPU)", width="large"),
        "finished_at": st.column_config.TextColumn("finished (UTC)"),
    }
    return configs


def front(df: pd.DataFrame) -> pd.DataFrame:
    """The same frame with the title and key metrics first (in `FIRST` order), the rest as they were."""
    first = [c for c in FIRST if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]
