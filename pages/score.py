"""Score page: a latency model's (or verifier's) predictions against the labels, by split and holdout group, next
to simple baselines; the metrics are `queries.scoring.metrics`'s (also `python -m queries score-predictions`)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import ui.routing  # noqa: F401  (first: see ui/routing.py)
from queries.scoring.metrics import METHODS
from queries.scoring.predictions import PredictionsError, read_file
from ui import context, data, links, widgets
from ui.text import md, md_code

cfg = context.settings()
info = context.current_store(cfg)
st.title("Score predictions")
st.caption("A file of predictions (Parquet, CSV or JSON Lines) with `id` (a row id), `score` (lower = predicted "
           "faster) and optionally `p_correct`. Latencies compare only within a problem: ranking metrics are taken "
           "per problem over rows with a label and averaged over problems; AUROC says how well `p_correct` tells "
           "rows with a label from failed ones. Baselines are scored the same way: random (fixed seed), program "
           "length and number of kernels (shorter / fewer = predicted faster and likelier correct).")
st.caption("Test rows are also scored apart by whether a near-copy of theirs (directly or through a chain of "
           "near-copies: same near-duplicate component) is in train (`by` test near-copies): a model may have "
           "learned those from training data.")

upload = st.file_uploader("Predictions file", type=["parquet", "csv", "jsonl", "ndjson", "json"], key="score_file")
path = "" if cfg.read_only else widgets.text_param("…or a path on this server", "path", key="score_path",
                                                   placeholder="/data/predictions.parquet")
if upload is not None:
    payload, name = upload.getvalue(), upload.name
elif path:
    try:
        payload, name = read_file(Path(path).expanduser()), path
    except OSError as error:
        st.error(f"Cannot read {md_code(path)}: {md(error.strerror or error)}")
        st.stop()
    except PredictionsError as error:
        st.error(md(error))
        st.stop()
else:
    st.info("Upload a predictions file" + ("." if cfg.read_only else ", or give its path on this server."))
    st.stop()

try:
    table, unknown = data.scored(info, cfg, payload, name)
except PredictionsError as error:
    st.error(md(error))
    st.stop()
if unknown:
    st.warning(f"{len(unknown):,} ids are not rows of this store and were left out (first: "
               f"{md(', '.join(unknown[:3]))}): is this the store the predictions were made for?")
if table.empty:
    st.stop()
table["method"] = table["method"].astype("category").cat.set_categories(METHODS)
st.dataframe(table.sort_values(["group_kind", "group", "method"], kind="stable"), hide_index=True,
             key="score_table", column_config={
                 "group_kind": st.column_config.TextColumn("by"),
                 "labelled_rows": st.column_config.NumberColumn("with a label", format="%d"),
                 "pairwise_accuracy": st.column_config.NumberColumn("pairwise accuracy", format="%.3f"),
                 "kendall_tau": st.column_config.NumberColumn("Kendall tau", format="%.3f"),
                 "top1_score": st.column_config.NumberColumn("top-1 score", format="%.3f"),
                 "top5_score": st.column_config.NumberColumn("top-5 score", format="%.3f"),
                 "recall_at_5": st.column_config.NumberColumn("recall of the true top 5", format="%.3f"),
                 "auroc": st.column_config.NumberColumn("AUROC (p_correct)", format="%.3f"),
             })
st.download_button("Download the metrics (CSV)", table.to_csv(index=False), file_name="scores.csv",
                   mime="text/csv", key="score_download", on_click="ignore")
links.copy_link("score", path=path or None)
