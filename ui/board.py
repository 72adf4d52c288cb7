"""The leaderboard of one problem (`queries.api.fastest`): its columns at a width that fits 1400 px, the Triton
share ("not checked" where a run could not count launches), flags with their legend, and a warning when its
measured speedups come from runs whose reference timings differ."""

from __future__ import annotations

import math

import pyarrow as pa
import streamlit as st

from common import checks
from ui import flags, widgets
from ui.labels import flags_text

RANKED_HELP = ("Ranked candidates pass one filter, the same for the header's fastest, this leaderboard, the Problems "
               "table and the fastest-correct export: a Triton kernel and no hack flag ("
               + ", ".join(checks.HACK_FLAGS) + "), unless the sidebar's toggles let them in.")
REFERENCE_SPREAD_WARN = 1.1  # reference medians further apart than this: a warning, else a note
# the columns a reader compares, in order; the rest stay off the table (the row page has them)
COLUMNS = ("rank", "id", "speedup_vs_reference", "kernel_names", "verified", "triton_share_text", "flags_text",
           "measured_ms", "ref_median_ms", "y", "copies", "speedup_vs_median")


def share_text(share: float | None, checked: bool | None, run_id: str | None) -> str:
    """A run's Triton share of GPU time as text: "—" never re-run, "not checked" where the run did not count."""
    if run_id is None or (isinstance(run_id, float) and math.isnan(run_id)):  # pandas' missing value
        return "—"
    if checked is not True or share is None or (isinstance(share, float) and math.isnan(share)):
        return "not checked"
    return f"{share:.0%}"


def row_flags_text(row_flags: list[str], static_not_checked: bool) -> str:
    """A row's flags as labels; "not checked" (or a note) where its static checks did not run."""
    if not row_flags:
        return "not checked" if static_not_checked else "none"
    return flags_text(row_flags) + (" · static checks: not checked" if static_not_checked else "")


def reference_spread(table: pa.Table) -> tuple[str, float] | None:
    """When the measured speedups come from more than one run: a sentence saying so with the range of the
    reference's medians, and that range as a ratio (max / min)."""
    runs = {(r["run_id"], r["ref_median_ms"]) for r in table.select(["run_id", "ref_median_ms"]).to_pylist()
            if r["run_id"] is not None and r["ref_median_ms"] is not None}
    if len(runs) < 2:
        return None
    refs = sorted(ms for _, ms in runs)
    ratio = refs[-1] / refs[0] if refs[0] > 0 else math.inf
    return (f"These speedups come from {len(runs)} different runs, each against the reference timed in its own "
            f"run: the reference's median was {refs[0]:.4g}-{refs[-1]:.4g} ms ({ratio:.2f}× apart), so compare "
            "speedups across rows with that in mind (re-run them together for a same-run comparison).", ratio)


def leaderboard(table: pa.Table, label_unit: str, *, key: str) -> None:
    df = table.to_pandas()
    if not df.empty:
        df["triton_share_text"] = [share_text(s, c, r) for s, c, r in
                                   zip(df["triton_share"], df["launches_checked"], df["run_id"], strict=True)]
        df["flags_text"] = [row_flags_text(list(f), nc) for f, nc in zip(df["flags"], df["static_not_checked"],
                                                                          strict=True)]
        df = df[[c for c in COLUMNS if c in df.columns]]
    spread = reference_spread(table)
    if spread is not None:
        (st.warning if spread[1] > REFERENCE_SPREAD_WARN else st.info)(spread[0])
    widgets.linked_table(df, key=key, target="row", id_column="id", param="row", column_config={
        "rank": st.column_config.NumberColumn("#", format="%d", width=40),
        "id": st.column_config.TextColumn("row", width=105),
        "speedup_vs_reference": st.column_config.NumberColumn(
            "speedup", format="%.2f×", width=75,
            help="measured: Model eager time / ModelNew time, both timed in the same re-run"),
        "kernel_names": st.column_config.ListColumn("kernels", width=160),
        "verified": st.column_config.TextColumn("verified", width=80, help="the latest re-run's verdict"),
        "triton_share_text": st.column_config.TextColumn(
            "Triton share", width=105,
            help="share of the re-run's GPU time spent in Triton kernels; not checked: the run could not count "
                 "launches (CPU interpreter, or a result from before launch accounting)"),
        "flags_text": st.column_config.TextColumn("flags", width=200,
                                                  help="static and latest-run flags; the legend below says what "
                                                       "each means"),
        "measured_ms": st.column_config.NumberColumn("measured (ms)", format="%.4g", width="small"),
        "ref_median_ms": st.column_config.NumberColumn("reference (ms)", format="%.4g", width="small",
                                                       help="Model's median in the same run"),
        "y": st.column_config.NumberColumn(f"label ({label_unit})", format="%.4g", width="small"),
        "copies": st.column_config.NumberColumn(format="%d", width="small"),
        "speedup_vs_median": st.column_config.NumberColumn("vs median label", format="%.2f×", width="small"),
    })
    if not df.empty:
        flags.legend([f for row in table["flags"].to_pylist() for f in row or []])
