"""AppTest checks of the near-duplicate additions: the Problem page's clusters and fold toggle, a row's near-copies,
the Export page's training set without leaks, the Score page's near-copy groups, and a store without clusters."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from queries.store import INDEX_FILE, Store
from tests.neardup_programs import build_neardup_store
from ui import links

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return build_neardup_store(tmp_path_factory.mktemp("neardup-pages"))


@pytest.fixture
def env(monkeypatch, tmp_path):
    def use(store: Path) -> None:
        monkeypatch.setenv("TLX_STORE", str(store))
        monkeypatch.setenv("TLX_RUNS_DIR", str(tmp_path / "runs"))
        monkeypatch.setenv("TLX_RUNNER_URL", "http://127.0.0.1:9")
        monkeypatch.delenv("TLX_READ_ONLY", raising=False)

    return use


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(links.page_file(page))
    return at.run()


def problem_of(store: Path, row_id: str) -> str:
    t = Store(store).read_index(["id", "problem_key"])
    return dict(zip(t["id"].to_pylist(), t["problem_key"].to_pylist(), strict=True))[row_id]


def frame(at: AppTest, key: str):
    return next(d for d in at.dataframe if d.proto.id and key in d.proto.id).value


def test_problem_page_shows_clusters_and_folds_near_copies(env, store):
    env(store)
    at = open_page("problem", problem=problem_of(store, "train/000000"))
    assert not at.exception, [e.value for e in at.exception]
    assert "Near-duplicate clusters" in [h.value for h in at.subheader]
    clusters = frame(at, "problem_clusters")
    got = clusters.iloc[0]
    assert (got["cluster"], got["rows"], got["fastest_id"], got["failed"]) == ("train/000000", 4, "train/000001", 1)
    assert got["spread"] == pytest.approx(0.010 / 0.008)
    assert len(frame(at, "leaderboard")) == 3  # the correct rows, each its own candidate
    at.toggle(key="leaderboard_fold_near").set_value(True).run()
    board = frame(at, "leaderboard")
    assert list(board["id"]) == ["train/000001"] and list(board["copies"]) == [3]
    assert at.query_params["fold"] in ("near", ["near"])


def test_row_page_lists_near_copies_with_labels(env, store):
    env(store)
    at = open_page("row", row="train/000000")
    assert not at.exception, [e.value for e in at.exception]
    copies = frame(at, "row_near_copies")
    assert list(copies["id"]) == ["train/000001", "train/000003", "train/000002"]  # fastest label first
    assert list(copies["y"])[:2] == [0.008, 0.009]
    alone = open_page("row", row="test/000002")
    assert any("has no near-copy" in c.value for c in alone.caption)


def test_export_page_builds_the_training_set_without_leaks(env, store):
    env(store)
    at = open_page("export")
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="train_export_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.metric][:2] == ["1", "6"]
    report = next(d.value for d in at.dataframe if "removed because" in d.value.columns)
    assert dict(zip(report["removed because"], report["rows"], strict=True)) == {
        "test_problem_key": 1, "test_kernelbench_name": 1, "near_copy_of_test": 1, "near_copy_folded": 3}


def test_score_page_scores_test_rows_with_and_without_a_near_copy_apart(env, store, tmp_path):
    env(store)
    path = tmp_path / "predictions.csv"
    path.write_text("id,score\n" + "".join(f"test/00000{i},{i}\n" for i in range(3)))
    at = open_page("score", path=str(path))
    assert not at.exception, [e.value for e in at.exception]
    groups = set(next(d.value for d in at.dataframe if "group_kind" in d.value.columns)["group"])
    assert {"test, with a near-copy in train", "test, without a near-copy in train"} <= groups


def test_a_store_without_clusters_says_how_to_find_them(env, store, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(store, old)
    pq.write_table(pq.read_table(old / INDEX_FILE).drop_columns(["near_dup_cluster"]), old / INDEX_FILE)
    meta = json.loads((old / "meta.json").read_text())
    meta.pop("near_dups")
    (old / "meta.json").write_text(json.dumps(meta))
    env(old)
    at = open_page("problem", problem=problem_of(old, "train/000000"))
    assert not at.exception, [e.value for e in at.exception]
    assert at.toggle(key="leaderboard_fold_near").proto.disabled
    assert any("near-dups --store" in c.value for c in at.caption)
    row = open_page("row", row="train/000000")
    assert not row.exception and any("near-dups --store" in c.value for c in row.caption)
    export = open_page("export")
    assert not export.exception and any("near-dups --store" in i.value for i in export.info)
