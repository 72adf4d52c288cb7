"""Scoring predictions against the labels (issue 24 part 2): each metric on inputs whose value is known exactly,
baselines, groups, the file readers' errors, the command line and the page."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from queries.scoring import metrics as scoring
from queries.scoring.predictions import PredictionsError, read_predictions
from tests.queries_helpers import settings_now
from tests.test_pages import env, no_exception, open_page, ui_store  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parent.parent


def test_metrics_on_hand_worked_examples():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert scoring.pairwise_accuracy(y, y) == 1.0 and scoring.pairwise_accuracy(-y, y) == 0.0
    assert scoring.pairwise_accuracy(np.array([1.0, 1.0, 3.0, 4.0]), y) == pytest.approx(5.5 / 6)  # one tie: half
    assert scoring.kendall_tau(y, y) == 1.0 and scoring.kendall_tau(-y, y) == -1.0
    assert scoring.kendall_tau(np.array([2.0, 1.0, 3.0, 4.0]), y) == pytest.approx(4 / 6)  # 5 concordant, 1 not
    assert scoring.kendall_tau(np.ones(4), y) is None
    assert scoring.top_k_score(-y, y, 1) == 0.25 and scoring.top_k_score(-y, y, 4) == 1.0
    assert scoring.top_k_score(np.array([3.0, 0.0, 1.0, 2.0]), y, 2) == 0.5  # picks rows 1 and 2: best y = 2
    assert scoring.recall_at_k(-y, y, 2) == 0.0 and scoring.recall_at_k(np.array([0, 2, 1, 3.0]), y, 2) == 0.5
    assert scoring.recall_at_k(y, y, 5) == 1.0  # k capped at the rows there are
    ok = np.array([True, True, False, False])
    assert scoring.auroc(np.array([0.9, 0.8, 0.1, 0.2]), ok) == 1.0
    assert scoring.auroc(np.array([0.1, 0.2, 0.9, 0.8]), ok) == 0.0
    assert scoring.auroc(np.array([0.5, 0.9, 0.5, 0.1]), ok) == pytest.approx(0.875)  # one tied pair: half
    assert scoring.auroc(np.ones(4), np.ones(4, bool)) is None


@pytest.mark.parametrize("n", [1, 2, 7, 513, 1000])
def test_pair_counts_match_every_pair_compared(n):
    rng = np.random.default_rng(n)
    score, y = rng.integers(0, 20, n).astype(float), rng.integers(0, 15, n).astype(float)  # many ties
    ds, dy = np.sign(score[:, None] - score[None, :]), np.sign(y[:, None] - y[None, :])
    pairs = np.triu(np.ones((n, n), bool), k=1)
    product = (ds * dy)[pairs]
    expected = ((product > 0).sum(), (product < 0).sum(), ((dy != 0) & (ds == 0))[pairs].sum(),
                (dy != 0)[pairs].sum(), (ds != 0)[pairs].sum())
    assert tuple(vars(scoring.pair_counts(score, y)).values()) == tuple(map(int, expected))


def synthetic() -> pd.DataFrame:
    """Two problems: A (4 labelled rows, 1 failed) and B (2 labelled rows); train and test (holdout h)."""
    rows = [("train/000000", "train", None, "A", 1.0), ("train/000001", "train", None, "A", 2.0),
            ("test/000000", "test", "h", "A", 3.0), ("test/000001", "test", "h", "A", 4.0),
            ("test/000002", "test", "h", "A", None), ("train/000002", "train", None, "B", 10.0),
            ("train/000003", "train", None, "B", 20.0)]
    frame = pd.DataFrame(rows, columns=["id", "split", "holdout_group", "problem_key", "y"])
    frame["ok"] = frame["y"].notna()
    frame["n_chars"] = [400, 300, 200, 100, 50, 10, 20]  # A: longer is faster; B: shorter is faster
    frame["n_kernels"] = [1, 1, 1, 1, 1, 2, 1]
    return frame


def test_perfect_and_reversed_models_with_baselines():
    frame = synthetic()
    frame["score"] = frame["y"].fillna(99.0)
    frame["p_correct"] = frame["ok"].astype(float)
    table = scoring.metrics(scoring.with_baselines(frame)).set_index(["group", "method"])
    model = table.loc[("all rows", "model")]
    assert model["rows"] == 7 and model["labelled_rows"] == 6 and model["problems"] == 2
    assert (model["pairwise_accuracy"], model["kendall_tau"], model["top1_score"], model["recall_at_5"],
            model["auroc"]) == (1.0, 1.0, 1.0, 1.0, 1.0)
    length = table.loc[("all rows", "program length")]
    assert length["pairwise_accuracy"] == 0.5 and length["kendall_tau"] == 0.0  # A reversed (0), B right (1)
    assert length["top1_score"] == pytest.approx((0.25 + 1.0) / 2)
    assert length["auroc"] == pytest.approx(2 / 6)  # 2 of the 6 labelled rows are shorter than the failed one
    kernels = table.loc[("all rows", "kernels")]
    assert kernels["pairwise_accuracy"] == pytest.approx((0.5 + 0.0) / 2)  # A all tied, B reversed
    test = table.loc[("h", "model")]
    assert test["rows"] == 3 and test["problems"] == 1 and test["auroc"] == 1.0
    assert set(table.index.get_level_values("group")) == {"all rows", "train", "test", "h"}
    frame["score"] = -frame["score"]
    frame["p_correct"] = 1 - frame["p_correct"]
    reversed_ = scoring.metrics(scoring.with_baselines(frame)).set_index(["group", "method"])
    train, held = reversed_.loc[("train", "model")], reversed_.loc[("h", "model")]
    assert (train["pairwise_accuracy"], train["kendall_tau"], held["auroc"]) == (0.0, -1.0, 0.0)
    assert pd.isna(train["auroc"])  # every train row has a label: one class, no AUROC


def test_random_baseline_is_fixed_and_predictions_without_p_correct_have_no_auroc():
    frame = synthetic()
    frame["score"], frame["p_correct"] = frame["y"].fillna(0), None
    one = scoring.metrics(scoring.with_baselines(frame))
    two = scoring.metrics(scoring.with_baselines(frame.sample(frac=1, random_state=3)))
    pd.testing.assert_frame_equal(one, two)  # seeded, in id order: the same whatever the file's order
    assert one.set_index("method").loc["model", "auroc"].isna().all()


def test_score_predictions_on_a_store(ui_store, tmp_path):  # noqa: F811
    index = pq.read_table(ui_store / "index.parquet", columns=["id", "y", "ok"]).to_pandas()
    predictions = pa.table({"id": [*index["id"], "train/999999"], "score": [*index["y"].fillna(1e9), 1.0],
                            "p_correct": [*index["ok"].astype(float), 0.5]})
    table, unknown = scoring.score_predictions(ui_store, settings_now(), predictions)
    assert unknown == ["train/999999"]
    model = table[(table["group"] == "all rows") & (table["method"] == "model")].iloc[0]
    assert model["rows"] == 36 and model["problems"] == 3
    assert model["top1_score"] == 1.0 and model["auroc"] == 1.0 and model["recall_at_5"] == 1.0


@pytest.mark.parametrize("name, content, message", [
    ("p.csv", "id,score\ntrain/000001,1.5\ntrain/000002,fast\n", "p.csv: line 3: field 'score' is not a number"),
    ("p.csv", "id,score\ntrain/000001,1\ntrain/000001,2\n", "p.csv: line 3: id 'train/000001' again (first at line 2)"),
    ("p.jsonl", '{"id": "a", "score": 1}\n{"id": "b"}\n', "p.jsonl: line 2: field 'score' is missing"),
    ("p.jsonl", '{"id": "a", "score": 1}\n{"id": "b", "score": 2\n', "p.jsonl: line 2: not JSON"),
    ("p.jsonl", '{"id": "a", "score": 1, "p_correct": 1.5}\n', "field 'p_correct' must lie in [0, 1]"),
    ("p.csv", "row,score\na,1\n", "p.csv: no column id"),
    ("p.txt", "", "unknown format"),
])
def test_bad_files_name_file_row_and_field(name, content, message):
    with pytest.raises(PredictionsError) as error:
        read_predictions(content.encode(), name)
    assert message in str(error.value)


def test_parquet_rows_are_counted_from_one():
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": ["a", "b"], "score": [1.0, float("nan")]}), sink)
    with pytest.raises(PredictionsError, match="p.parquet: row 2: field 'score' must be a finite number"):
        read_predictions(sink.getvalue(), "p.parquet")


def test_command_line(ui_store, tmp_path):  # noqa: F811
    index = pq.read_table(ui_store / "index.parquet", columns=["id", "y"]).to_pylist()
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps({"id": r["id"], "score": r["y"] or 1e9}) for r in index))
    done = subprocess.run([sys.executable, "-m", "queries", "score-predictions", str(path), "--store", str(ui_store)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pairwise_accuracy" in done.stdout and "program length" in done.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("id,score\ntrain/000001,x\n")
    done = subprocess.run([sys.executable, "-m", "queries", "score-predictions", str(bad), "--store", str(ui_store)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "bad.csv: line 2: field 'score' is not a number" in done.stderr


def test_score_page_reads_a_server_path_and_refuses_it_read_only(env, ui_store, tmp_path):  # noqa: F811
    index = pq.read_table(ui_store / "index.parquet", columns=["id", "y"]).to_pandas()
    path = tmp_path / "preds.csv"
    pd.DataFrame({"id": index["id"], "score": index["y"].fillna(1e9)}).to_csv(path, index=False)
    env(ui_store)
    at = open_page("score", path=str(path))
    no_exception(at)
    table = next(d.value for d in at.dataframe if "pairwise_accuracy" in d.value.columns)
    assert set(table["method"]) == set(scoring.METHODS)
    env(ui_store, TLX_READ_ONLY="1")
    at = open_page("score", path=str(path))
    no_exception(at)
    assert not at.text_input and not any("pairwise_accuracy" in d.value.columns for d in at.dataframe)
