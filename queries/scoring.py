"""Scoring a latency model or verifier against the labels (the metrics learned cost models report, TenSet's).

Latencies compare only within a problem, so the ranking metrics are computed per problem over its rows with a
label and then averaged over problems (each problem counts once):
- `pairwise_accuracy`: share of pairs with different labels that the score orders the same way (a score tie
  counts half);
- `kendall_tau`: Kendall's tau-b between score and label;
- `top1_score`, `top5_score`: best label ÷ the best label among the k rows with the lowest score (1 = the model's
  top k hold the fastest candidate);
- `recall_at_5`: share of the true 5 fastest found among the model's 5 lowest scores (fewer rows: all of them).
`auroc` is over all rows of the group: how well `p_correct` separates rows with a label from rows without.

Each is computed the same way for baselines: `random` (uniform scores from a fixed seed, in id order),
`program length` (shorter = predicted faster and likelier correct) and `kernels` (fewer `@triton.jit` kernels =
predicted faster and likelier correct). Groups: every row, each split, each holdout group (test rows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from queries.db import connect

SEED = 0
METHODS = ("model", "random", "program length", "kernels")
METRICS = ("pairwise_accuracy", "kendall_tau", "top1_score", "top5_score", "recall_at_5", "auroc")


def pairwise_accuracy(score: np.ndarray, y: np.ndarray) -> float | None:
    """Share of pairs with y_i != y_j that score orders as y does (score ties count 0.5); None without pairs."""
    ds = np.sign(score[:, None] - score[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    pairs = np.triu(dy != 0, k=1)
    if not pairs.any():
        return None
    agree = np.where(ds == dy, 1.0, np.where(ds == 0, 0.5, 0.0))
    return float(agree[pairs].mean())


def kendall_tau(score: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b (ties in either variable handled); None when either side is constant."""
    upper = np.triu(np.ones((len(y), len(y)), dtype=bool), k=1)
    ds = np.sign(score[:, None] - score[None, :])[upper]
    dy = np.sign(y[:, None] - y[None, :])[upper]
    denominator = np.sqrt(np.count_nonzero(ds) * np.count_nonzero(dy))
    return float((ds * dy).sum() / denominator) if denominator else None


def top_k_score(score: np.ndarray, y: np.ndarray, k: int) -> float:
    """min(y) ÷ min(y of the k rows with the lowest score; ties in score by position)."""
    picked = np.argsort(score, kind="stable")[:k]
    return float(y.min() / y[picked].min())


def recall_at_k(score: np.ndarray, y: np.ndarray, k: int) -> float:
    """|model's top k ∩ true top k| / k, with k capped at the number of rows (ties by position)."""
    k = min(k, len(y))
    model = set(np.argsort(score, kind="stable")[:k])
    truth = set(np.argsort(y, kind="stable")[:k])
    return len(model & truth) / k


def auroc(p: np.ndarray, positive: np.ndarray) -> float | None:
    """Area under the ROC curve of `p` for `positive` (Mann-Whitney, ties averaged); None with one class only."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if not n_pos or not n_neg:
        return None
    ranks = pd.Series(p).rank(method="average").to_numpy()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _per_problem(frame: pd.DataFrame, column: str) -> dict[str, float | None]:
    """The ranking metrics of one score column, averaged over the problems of `frame` (labelled rows only)."""
    values: dict[str, list[float]] = {m: [] for m in METRICS[:5]}
    for _, rows in frame[frame["ok"]].groupby("problem_key", sort=True):
        score, y = rows[column].to_numpy(dtype=float), rows["y"].to_numpy(dtype=float)
        for name, value in (("pairwise_accuracy", pairwise_accuracy(score, y)), ("kendall_tau", kendall_tau(score, y)),
                            ("top1_score", top_k_score(score, y, 1)), ("top5_score", top_k_score(score, y, 5)),
                            ("recall_at_5", recall_at_k(score, y, 5))):
            if value is not None:
                values[name].append(value)
    return {name: float(np.mean(v)) if v else None for name, v in values.items()}


def with_baselines(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (id, score, p_correct, y, ok, n_chars, n_kernels, …) plus a score and a p_correct column per method."""
    frame = frame.sort_values("id").reset_index(drop=True)
    rng = np.random.default_rng(SEED)
    frame["score::model"], frame["p::model"] = frame["score"], frame["p_correct"]
    frame["score::random"] = rng.random(len(frame))
    frame["p::random"] = rng.random(len(frame))
    for method, column in (("program length", "n_chars"), ("kernels", "n_kernels")):
        frame[f"score::{method}"] = frame[column].astype(float)
        frame[f"p::{method}"] = -frame[column].astype(float)
    return frame


def metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, method): rows, problems and every metric. `frame` as `with_baselines` returns it."""
    groups = [("all", "all rows", frame)]
    groups += [("split", split, part) for split, part in frame.groupby("split", sort=True)]
    test = frame[frame["split"] == "test"]
    groups += [("holdout group", group, part) for group, part in test.groupby("holdout_group", sort=True)]
    out = []
    for kind, name, part in groups:
        labelled = part[part["ok"]]
        for method in METHODS:
            row = {"group_kind": kind, "group": name, "method": method, "rows": len(part),
                   "labelled_rows": len(labelled), "problems": labelled["problem_key"].nunique()}
            row |= _per_problem(part, f"score::{method}")
            p = part[f"p::{method}"]
            row["auroc"] = None if p.isna().any() else auroc(p.to_numpy(dtype=float), part["ok"].to_numpy(bool))
            out.append(row)
    return pd.DataFrame(out)


def score_predictions(store: Path | str, predictions: pa.Table) -> tuple[pd.DataFrame, list[str]]:
    """Metrics of `predictions` (`queries.predictions.SCHEMA`) on `store`, and the ids the store does not hold."""
    db = connect(store)
    joined = db.execute("score_rows", tables={"predictions": predictions}).to_pandas()
    unknown = db.execute("score_unknown_ids", tables={"predictions": predictions}).column("id").to_pylist()
    if joined.empty:
        return pd.DataFrame(columns=["group_kind", "group", "method", "rows", "labelled_rows", "problems",
                                     *METRICS]), unknown
    return metrics(with_baselines(joined)), unknown
