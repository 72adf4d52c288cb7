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
predicted faster and likelier correct). Groups: every row, each split, each holdout group (test rows), and test's
rows with and without a near-copy in train (a row of their near-duplicate cluster: queries/neardup/), where the
store's clusters were computed: a model that saw a near-copy in training may score better on those alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from common.settings import Settings
from queries.db import connect
from queries.neardup.views import clustered

SEED = 0
METHODS = ("model", "random", "program length", "kernels")
METRICS = ("pairwise_accuracy", "kendall_tau", "top1_score", "top5_score", "recall_at_5", "auroc")


@dataclass(frozen=True)
class PairCounts:
    """Over the pairs i < j of one problem: signs of score and label differences compared."""

    concordant: int  # score and label differ the same way
    discordant: int  # they differ opposite ways
    score_ties: int  # label differs, score tied
    label_pairs: int  # label differs
    score_pairs: int  # score differs


def _tied_pairs(*columns: np.ndarray) -> int:
    """Pairs equal in every one of `columns` (each sorted by them: ties are runs)."""
    if not len(columns[0]):
        return 0
    order = np.lexsort(columns[::-1])
    change = np.zeros(len(order) - 1, dtype=bool)
    for column in columns:
        change |= np.diff(column[order]) != 0
    runs = np.diff(np.flatnonzero(np.concatenate(([True], change, [True]))))
    return int((runs * (runs - 1) // 2).sum())


def _inversions(values: np.ndarray) -> int:
    """Pairs i < j with values[i] > values[j] (non-negative ints): a bottom-up merge sort, one numpy pass per
    level, so O(n log² n) whatever the ties."""
    n, total, width = len(values), 0, 1
    big = int(values.max()) + 1 if n else 1
    runs, position = values.astype(np.int64), np.arange(n)
    while width < n:
        block = position // (2 * width)
        right = (position // width) % 2 == 1
        keys = runs + block * big  # each block's values shifted above the previous block's: one sorted array
        left_keys, right_keys = keys[~right], keys[right]
        not_above = np.searchsorted(left_keys, right_keys, side="right")  # left keys <= it, earlier blocks too
        block_end = np.searchsorted(left_keys, (block[right] + 1) * big, side="left")
        total += int((block_end - not_above).sum())  # this block's left values above each right value
        runs = np.sort(keys) - block * big  # the two runs of each block merged in place
        width *= 2
    return total


def pair_counts(score: np.ndarray, y: np.ndarray) -> PairCounts:
    """Knight's method: sort by (score, y); discordant pairs are the inversions of y in that order; ties counted
    by grouping. O(n log² n): a problem of 100,000 rows takes about a second."""
    n = len(y)
    _, y_rank = np.unique(y, return_inverse=True)
    order = np.lexsort((y_rank, score))
    discordant = _inversions(y_rank[order])
    pairs, score_tied, y_tied = n * (n - 1) // 2, _tied_pairs(score), _tied_pairs(y_rank)
    both_tied = _tied_pairs(score, y_rank)
    concordant = pairs - score_tied - y_tied + both_tied - discordant
    return PairCounts(concordant, discordant, score_tied - both_tied, pairs - y_tied, pairs - score_tied)


def pairwise_accuracy(score: np.ndarray, y: np.ndarray, counts: PairCounts | None = None) -> float | None:
    """Share of pairs with y_i != y_j that score orders as y does (score ties count 0.5); None without pairs."""
    c = counts or pair_counts(score, y)
    return (c.concordant + 0.5 * c.score_ties) / c.label_pairs if c.label_pairs else None


def kendall_tau(score: np.ndarray, y: np.ndarray, counts: PairCounts | None = None) -> float | None:
    """Kendall's tau-b (ties in either variable handled); None when either side is constant."""
    c = counts or pair_counts(score, y)
    denominator = math.sqrt(c.score_pairs * c.label_pairs)
    return (c.concordant - c.discordant) / denominator if denominator else None


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


def _per_problem(frame: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Per method: the ranking metrics averaged over the problems of `frame` (labelled rows only)."""
    columns = [f"score::{m}" for m in METHODS]
    labelled = frame.loc[frame["ok"], ["problem_key", "y", *columns]]
    values = {m: {name: [] for name in METRICS[:5]} for m in METHODS}
    for _, rows in labelled.groupby("problem_key", sort=True):
        y = rows["y"].to_numpy(dtype=float)
        for method, column in zip(METHODS, columns, strict=True):
            score = rows[column].to_numpy(dtype=float)
            counts = pair_counts(score, y)
            for name, value in (("pairwise_accuracy", pairwise_accuracy(score, y, counts)),
                                ("kendall_tau", kendall_tau(score, y, counts)),
                                ("top1_score", top_k_score(score, y, 1)), ("top5_score", top_k_score(score, y, 5)),
                                ("recall_at_5", recall_at_k(score, y, 5))):
                if value is not None:
                    values[method][name].append(value)
    return {m: {name: float(np.mean(v)) if v else None for name, v in per.items()} for m, per in values.items()}


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
    if "near_copy_in_train" in test and test["near_copy_in_train"].notna().any():
        near = test["near_copy_in_train"].astype(bool)
        groups += [("test near-copies", "test, with a near-copy in train", test[near]),
                   ("test near-copies", "test, without a near-copy in train", test[~near])]
    out = []
    for kind, name, part in groups:
        labelled = part[part["ok"]]
        ranking = _per_problem(part)
        for method in METHODS:
            row = {"group_kind": kind, "group": name, "method": method, "rows": len(part),
                   "labelled_rows": len(labelled), "problems": labelled["problem_key"].nunique()}
            row |= ranking[method]
            p = part[f"p::{method}"]
            row["auroc"] = None if p.isna().any() else auroc(p.to_numpy(dtype=float), part["ok"].to_numpy(bool))
            out.append(row)
    return pd.DataFrame(out)


def score_predictions(store: Path | str, settings: Settings,
                      predictions: pa.Table) -> tuple[pd.DataFrame, list[str]]:
    """Metrics of `predictions` (`queries.scoring.predictions.SCHEMA`) on `store`, and the ids the store does not hold."""
    db = connect(store, settings)
    joined = db.execute("score_rows", {"clustered": clustered(store)}, tables={"predictions": predictions}).to_pandas()
    unknown = db.execute("score_unknown_ids", tables={"predictions": predictions}).column("id").to_pylist()
    if joined.empty:
        return pd.DataFrame(columns=["group_kind", "group", "method", "rows", "labelled_rows", "problems",
                                     *METRICS]), unknown
    return metrics(with_baselines(joined)), unknown
