"""Near-duplicate clusters (queries/neardup/) and the leakage-free training export (queries/export_train.py),
with constructed near-copies (renamed, re-commented, a constant changed), programs that do something else, and a
chain of near-copies whose ends are not alike."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from queries.neardup.clusters import THRESHOLD, group
from queries.neardup.command import COLUMN, COMPONENT_COLUMN, near_dups
from queries.neardup.shingles import jaccard, signature, tokens
from queries.store import INDEX_FILE, Store
from tests.neardup_programs import (
    BASE,
    CHAIN,
    DISTINCT,
    NEAR_COPIES,
    SOFTMAX,
    TEST,
    TRAIN,
    build_neardup_store,
    build_store,
    renamed,
)
from tests.queries_helpers import settings_now


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_neardup_store(tmp_path_factory.mktemp("neardup"))


def clusters_of(store, column: str = COLUMN) -> dict[str, str | None]:
    t = Store(store).read_index(["id", column])
    return dict(zip(t["id"].to_pylist(), t[column].to_pylist(), strict=True))


def grouping_of(texts: list[str]):
    found = [signature(t) for t in texts]
    return group(np.stack([f[1] for f in found]), [f[2] for f in found])


def test_tokens_drop_comments_and_strings_normalise_names_and_keep_attributes_and_numbers():
    toks = tokens('x_ptr = tl.load(a + 1)  # load\ns = "text"\n\n\nfor i in range(4):  pass\n')
    assert toks == ["N", "=", "N", ".", "load", "(", "N", "+", "1", ")", "N", "=", '"', "for", "N", "in", "N",
                    "(", "4", ")", ":", "pass"]
    assert tokens("y = 1e5\n") == ["N", "=", "1e5"]  # the exponent is no name


@pytest.mark.parametrize("kind", sorted(NEAR_COPIES))
def test_each_near_copy_is_alike_and_distinct_programs_are_not(kind):
    assert jaccard(BASE, NEAR_COPIES[kind]()) >= 0.9
    for other in DISTINCT.values():
        assert jaccard(BASE, other) < 0.5


def test_near_copies_share_one_cluster_and_distinct_programs_stay_alone():
    texts = [BASE, *(make() for make in NEAR_COPIES.values()), *DISTINCT.values()]
    grouping = grouping_of(texts)
    copies = 1 + len(NEAR_COPIES)
    for found in (grouping.cluster, grouping.component):
        assert set(found[:copies]) == {0}
        assert len(set(found[copies:])) == len(DISTINCT) and 0 not in set(found[copies:])
    assert len(grouping.links) == copies * (copies - 1) // 2  # every two near-copies are linked


def test_a_chain_is_one_component_but_its_ends_never_share_a_cluster():
    a, b, c = CHAIN
    assert jaccard(a, b) >= THRESHOLD and jaccard(b, c) >= THRESHOLD and jaccard(a, c) < THRESHOLD - 0.05
    for texts in (CHAIN, CHAIN[::-1], [b, a, c], [*DISTINCT.values(), *CHAIN]):
        grouping = grouping_of(texts)
        at = {name: texts.index(text) for name, text in zip("abc", CHAIN, strict=True)}
        assert sorted(map(tuple, grouping.links.tolist())) == sorted(
            tuple(sorted((at[x], at[y]))) for x, y in ("ab", "bc"))
        assert len({grouping.component[at[x]] for x in "abc"}) == 1
        assert grouping.cluster[at["a"]] != grouping.cluster[at["c"]]
        assert grouping.cluster[at["b"]] in (grouping.cluster[at["a"]], grouping.cluster[at["c"]])


def test_every_two_members_of_a_cluster_are_alike_by_exact_jaccard():
    texts = [*CHAIN, BASE, *(make() for make in NEAR_COPIES.values()), *DISTINCT.values(), CHAIN[1] + CHAIN[2]]
    grouping = grouping_of(texts)
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if grouping.cluster[i] == grouping.cluster[j]:
                assert jaccard(texts[i], texts[j]) >= THRESHOLD, (i, j)
            if jaccard(texts[i], texts[j]) >= THRESHOLD:
                assert grouping.component[i] == grouping.component[j], (i, j)


def test_a_program_without_tokens_has_no_signature():
    assert signature("# only a comment\n")[1:] == (None, None)


def test_the_command_writes_a_cluster_per_row_named_by_its_first_row(store):
    got = clusters_of(store)
    assert [got[f"train/00000{i}"] for i in range(4)] == ["train/000000"] * 4
    assert got["train/000004"] == got["test/000001"] == "test/000001"  # a near-copy across problems
    assert got["train/000005"] == got["test/000000"] == "test/000000"
    assert got["train/000006"] is None and got["test/000002"] is None  # no near-copy: null
    assert clusters_of(store, COMPONENT_COLUMN) == got  # no chain here: components are the clusters
    meta = Store(store).meta.near_dups
    assert meta["done"] and meta["clusters"] == 3 and meta["rows_in_clusters"] == 8 and meta["threshold"] == 0.7
    # links join distinct normalised candidates: base (= renamed), re-commented, constant changed; the other
    # clusters' rows are equal once names are normalised
    assert meta["components"] == 3 and meta["rows_in_components"] == 8 and meta["links"] == 3


def test_running_it_again_gives_the_same_clusters(store, tmp_path):
    before = clusters_of(store)
    result = near_dups(store, workers=1, progress=False)
    assert clusters_of(store) == before and result["rows"] == len(TRAIN) + len(TEST)


def test_a_store_built_before_the_column_reads_it_as_null_and_still_connects(store, tmp_path):
    import shutil

    from queries.db import connect

    old = tmp_path / "old"
    shutil.copytree(store, old)
    index = pq.read_table(old / INDEX_FILE)
    pq.write_table(index.drop_columns([COLUMN, COMPONENT_COLUMN]), old / INDEX_FILE)
    meta = json.loads((old / "meta.json").read_text())
    meta.pop("near_dups")
    (old / "meta.json").write_text(json.dumps(meta))
    for column in (COLUMN, COMPONENT_COLUMN):
        assert Store(old).read_index([column])[column].null_count == index.num_rows
    got = connect(old, settings_now()).run("SELECT count(*) AS n, count(near_dup_cluster) AS named FROM programs").to_pylist()
    assert got == [{"n": index.num_rows, "named": 0}]
    from queries.export_train import TrainExportError, train_export

    with pytest.raises(TrainExportError, match="near-dups"):
        train_export(old, settings_now())


def reasons(export) -> dict[str, str]:
    return dict(zip(export.removed["id"].to_pylist(), export.removed["removed_reason"].to_pylist(), strict=True))


def test_export_train_leaves_out_test_problems_kernelbench_names_near_copies_and_folds_clusters(store):
    from queries.export_train import train_export

    export = train_export(store, settings_now())
    assert export.rows["id"].to_pylist() == ["train/000001"]  # the fastest correct of its cluster
    assert reasons(export) == {"train/000000": "near_copy_folded", "train/000002": "near_copy_folded",
                               "train/000003": "near_copy_folded", "train/000004": "near_copy_of_test",
                               "train/000005": "test_problem_key", "train/000006": "test_kernelbench_name"}
    assert export.report["removed"] == {"test_problem_key": 1, "test_kernelbench_name": 1, "near_copy_of_test": 1,
                                        "near_copy_folded": 3}
    assert export.report["kept"] == 1 and export.report["train_rows"] == len(TRAIN)


def test_export_train_all_members_and_one_holdout_group(store):
    from queries.export_train import train_export

    export = train_export(store, settings_now(), ["half_holdout"], representative=False)
    assert reasons(export) == {"train/000005": "test_problem_key"}
    assert export.report["holdout_groups"] == ["half_holdout"] and export.report["members"] == "all"


def test_export_train_refuses_an_unknown_holdout_group(store):
    from queries.export_train import TrainExportError, train_export

    with pytest.raises(TrainExportError, match="unknown holdout group nope"):
        train_export(store, settings_now(), ["nope"])


def test_export_train_command_writes_rows_with_code_the_removed_rows_and_the_report(store, tmp_path, capsys):
    from queries.__main__ import main

    out = tmp_path / "train.parquet"
    assert main(["export-train", "--store", str(store), "--out", str(out)]) == 0
    rows = pq.read_table(out)
    assert rows["id"].to_pylist() == ["train/000001"] and rows["x"][0].as_py().endswith(renamed())
    assert "code_shard" not in rows.column_names and "problem_key" in rows.column_names
    removed = pq.read_table(tmp_path / "train.removed.parquet")
    assert removed.num_rows == 6 and "removed_reason" in removed.column_names
    report = json.loads((tmp_path / "train.report.json").read_text())
    assert report["removed"]["near_copy_of_test"] == 1
    assert "near_copy_folded: 3" in capsys.readouterr().err


def test_near_dups_command_line(store, capsys):
    from queries.__main__ import main

    assert main(["near-dups", "--store", str(store), "--quiet", "--workers", "1"]) == 0
    assert main(["near-dups", "--store", str(store), "--threshold", "1.5"]) == 2
    assert "not in (0, 1]" in capsys.readouterr().err


def test_scoring_splits_test_rows_by_a_near_copy_in_train(store):
    from queries.scoring.metrics import score_predictions

    ids = [f"train/00000{i}" for i in range(len(TRAIN))] + [f"test/00000{i}" for i in range(len(TEST))]
    predictions = pa.table({"id": ids, "score": [float(i) for i in range(len(ids))],
                            "p_correct": pa.nulls(len(ids), pa.float64())})
    table, unknown = score_predictions(store, settings_now(), predictions)
    assert unknown == []
    model = table[(table["group_kind"] == "test near-copies") & (table["method"] == "model")]
    # test/000000 (matmul: train/000005) and test/000001 (softmax: train/000004) have one; test/000002 has none
    assert dict(zip(model["group"], model["rows"], strict=True)) == {"test, with a near-copy in train": 2,
                                                                    "test, without a near-copy in train": 1}


def test_distinct_candidates_are_numbered_by_their_first_row_whatever_order_workers_answer_in():
    from queries.neardup.command import _in_row_order

    digest_of = np.array([2, -1, 0, 2, 1])  # the workers met distinct 2 first, at row 0
    signatures = np.array([[10], [11], [12]], np.uint32)
    sets = [np.array([v], np.uint32) for v in (20, 21, 22)]
    got_digest_of, got_signatures, got_sets = _in_row_order(digest_of.copy(), signatures, sets)
    assert got_digest_of.tolist() == [0, -1, 1, 0, 2] and got_signatures.ravel().tolist() == [12, 10, 11]
    assert [int(s[0]) for s in got_sets] == [22, 20, 21]


def test_a_failure_midway_leaves_the_store_as_it_was(store, monkeypatch):
    import queries.neardup.command as command
    from queries.neardup.command import NearDupError

    before = ((store / INDEX_FILE).read_bytes(), (store / "meta.json").read_bytes())

    def broken(*args):
        raise OSError("disk gone")

    monkeypatch.setattr(command, "signatures_of", broken)
    with pytest.raises(NearDupError, match="disk gone"):
        near_dups(store, workers=1, progress=False)
    assert ((store / INDEX_FILE).read_bytes(), (store / "meta.json").read_bytes()) == before


@pytest.fixture(scope="module")
def chain_store(tmp_path_factory):
    """Test row A (problem cA); train rows B (cB), C (cC): A ~ B ~ C, A and C not alike; and an unrelated one."""
    train = [("cB", CHAIN[1], 0.02), ("cC", CHAIN[2], 0.01), ("soft", SOFTMAX, 0.03)]
    test = [("cA", CHAIN[0], 0.02, "1_1", "full_holdout")]
    return build_store(tmp_path_factory.mktemp("chain"), train, test, {"cA": 16, "cB": 24, "cC": 32, "soft": 40})


def test_export_train_leaves_out_a_row_chained_to_a_test_row_in_another_cluster(chain_store):
    from queries.export_train import train_export

    clusters, components = clusters_of(chain_store), clusters_of(chain_store, COMPONENT_COLUMN)
    assert clusters["test/000000"] != clusters["train/000001"]  # A and C: not near-copies, not one cluster
    assert components["test/000000"] == components["train/000000"] == components["train/000001"] == "test/000000"
    for representative in (True, False):
        export = train_export(chain_store, settings_now(), representative=representative)
        assert export.rows["id"].to_pylist() == ["train/000002"]
        assert reasons(export) == {"train/000000": "near_copy_of_test", "train/000001": "near_copy_of_test"}


def test_scoring_counts_a_chained_train_row_as_a_near_copy_in_train(chain_store, tmp_path):
    from queries.scoring.metrics import score_predictions

    predictions = pa.table({"id": ["train/000000", "train/000001", "train/000002", "test/000000"],
                            "score": [1.0, 2.0, 3.0, 4.0], "p_correct": pa.nulls(4, pa.float64())})
    table, _ = score_predictions(chain_store, settings_now(), predictions)
    model = table[(table["group_kind"] == "test near-copies") & (table["method"] == "model")]
    assert dict(zip(model["group"], model["rows"], strict=True)) == {"test, with a near-copy in train": 1,
                                                                    "test, without a near-copy in train": 0}


def test_a_store_clustered_before_components_is_not_exported_until_clustered_again(store, tmp_path):
    """A run of the code before components left `near_dup_component` null: the export would keep near-copies of
    test rows, so it refuses until near-dups runs again."""
    import shutil

    from queries.export_train import TrainExportError, train_export
    from queries.neardup.views import clustered

    old = tmp_path / "old"
    shutil.copytree(store, old)
    pq.write_table(pq.read_table(old / INDEX_FILE).drop_columns([COMPONENT_COLUMN]), old / INDEX_FILE)
    meta = json.loads((old / "meta.json").read_text())
    for key in ("components", "rows_in_components", "links"):
        meta["near_dups"].pop(key)
    (old / "meta.json").write_text(json.dumps(meta))
    assert not clustered(old)
    with pytest.raises(TrainExportError, match="near-dups"):
        train_export(old, settings_now())
    near_dups(old, workers=1, progress=False)
    assert clustered(old) and reasons(train_export(old, settings_now()))["train/000004"] == "near_copy_of_test"
