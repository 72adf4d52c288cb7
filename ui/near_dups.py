"""Near-duplicate clusters on the pages: the leaderboard's fold toggle and the Problem page's clusters, a row's
near-copies (Kernel page) and the leakage-free training export (Export page)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import streamlit as st

from common.settings import Settings
from queries import api
from queries.store import LOCATION_COLUMNS
from ui import links, widgets
from ui.text import md, md_code

HOW = ("Near-copies: candidate parts whose token 5-grams (comments, whitespace and local names aside) are ≥ 70% "
       "alike (Jaccard, found by MinHash + LSH; `--threshold` changes it); every two rows of a cluster are "
       "near-copies (`python -m queries near-dups`).")
NOT_RUN = "This store has no near-duplicate clusters yet: `python -m queries near-dups --store {store}` finds them."


def fold_toggle(store: Path, *, key: str) -> bool:
    """The leaderboard's "fold near-copies" toggle (off, and disabled, in a store without clusters)."""
    ready = api.clustered(store)
    value = st.toggle("Fold near-copies", value=ready and links.param("fold") == "near", key=key, disabled=not ready,
                      help=("each near-duplicate cluster shows as its fastest row; `copies` counts its ranked rows. "
                            + HOW) if ready else NOT_RUN.format(store=store))
    links.sync_params(fold="near" if value else None)
    return value


def problem_clusters(store: Path, cfg: Settings, problem_key: str, *, key: str) -> None:
    """The Problem page's clusters: size, fastest member and label spread inside each."""
    st.subheader("Near-duplicate clusters")
    if not api.clustered(store):
        st.caption(md(NOT_RUN.format(store=store)))
        return
    table = api.problem_clusters(store, cfg, problem_key)
    if not table.num_rows:
        st.caption("No candidate of this problem has a near-copy. " + HOW)
        return
    st.caption(f"{table.num_rows:,} clusters (largest first); **spread** is the slowest correct member's label ÷ "
               f"the fastest's. " + HOW)
    widgets.linked_table(table.to_pandas(), key=key, target="row", id_column="fastest_id", param="row",
                         column_config={
                             "cluster": st.column_config.TextColumn("cluster", help="its first row's id"),
                             "rows": st.column_config.NumberColumn("rows here", format="%d"),
                             "rows_in_store": st.column_config.NumberColumn("rows, all problems", format="%d"),
                             "fastest_id": st.column_config.TextColumn("fastest correct"),
                             "fastest_y": st.column_config.NumberColumn(f"fastest ({cfg.label_unit})", format="%.4g"),
                             "median_y": st.column_config.NumberColumn(f"median ({cfg.label_unit})", format="%.4g"),
                             "slowest_y": st.column_config.NumberColumn(f"slowest ({cfg.label_unit})", format="%.4g"),
                             "spread": st.column_config.NumberColumn("spread", format="%.2f×"),
                             "failed": st.column_config.NumberColumn("failed", format="%d"),
                         })


def row_near_copies(store: Path, cfg: Settings, row_id: str, cluster: str | None, *, key: str) -> None:
    """The Kernel page's list of the row's near-copies, each with its label."""
    st.subheader("Near-copies")
    if not api.clustered(store):
        st.caption(md(NOT_RUN.format(store=store)))
        return
    if not cluster:
        st.caption("This row has no near-copy. " + HOW)
        return
    table = api.near_copies(store, cfg, row_id)
    st.caption(f"{table.num_rows:,} other rows of cluster {md_code(cluster)}"
               + (" (the first shown)" if table.num_rows >= 200 else "") + ", fastest label first. " + HOW)
    widgets.linked_table(table.to_pandas(), key=key, target="row", id_column="id", param="row", column_config={
        "y": st.column_config.NumberColumn(f"label ({cfg.label_unit})", format="%.4g"),
        "same_problem": st.column_config.CheckboxColumn("same problem"),
    })


def train_export(store: Path, cfg: Settings, holdout_groups: list[str]) -> None:
    """The Export page's training set without leaks (`python -m queries export-train`)."""
    st.subheader("Training set without leaks")
    st.caption("Train rows, less those whose problem is a test problem (by problem key and by KernelBench name), "
               "those linked to a test row by near-copies, directly or through a chain of them (one near-duplicate "
               "component), and (unless all members are kept) all but the fastest correct row of each cluster. The same as `python -m queries export-train --store "
               f"{md(store)} --out FILE.parquet`, which also writes the program text.")
    if not api.clustered(store):
        st.info(md(NOT_RUN.format(store=store)))
        return
    groups = st.multiselect("Against test's holdout groups", holdout_groups, default=holdout_groups,
                            key="train_export_groups")
    members = st.radio("Cluster members", ["one representative (fastest correct)", "all"], horizontal=True,
                       key="train_export_members")
    if not groups:
        st.info("Pick at least one holdout group.")
        return
    if st.button("Prepare training set", key="train_export_prepare"):
        try:
            with st.spinner("Selecting the training rows…"):
                export = api.train_export(store, cfg, groups, representative=members != "all")
        except api.TrainExportError as error:
            st.error(md(error))
            return
        report = export.report
        cols = st.columns(2)
        cols[0].metric("train rows kept", f"{report['kept']:,}", help=f"of {report['train_rows']:,}")
        cols[1].metric("removed", f"{sum(report['removed'].values()):,}")
        st.dataframe([{"removed because": reason, "rows": count} for reason, count in report["removed"].items()],
                     hide_index=True, key="train_export_report")
        st.download_button(f"Download train-without-leaks.parquet ({report['kept']:,} rows, index fields)",
                           _parquet(export.rows.drop_columns(list(LOCATION_COLUMNS))),
                           file_name="train-without-leaks.parquet", key="train_export_download", on_click="ignore")
        st.download_button(f"Download removed.parquet ({export.removed.num_rows:,} rows and why)",
                           _parquet(export.removed), file_name="train-removed.parquet",
                           key="train_export_removed", on_click="ignore")


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()
