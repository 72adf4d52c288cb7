"""One candidate filter for every ranking (leaderboard, problems table, page header, fastest-correct export): Triton
kernels only and no hack flag, static (index) or the latest run's; toggles let them in. Plus the flag and level
filters, flag counts, the Triton share and the reference-time spread, and stores built before static_flags."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.checks import CHECKS, HACK_FLAGS
from queries import api
from queries.db import clear_cache
from queries.filters import Candidates, Filters
from queries.ingest import ingest
from tests.fixtures import program
from tests.queries_helpers import result, settings_now, write_results
from ui.board import reference_spread, row_flags_text, share_text

HONEST = program("relu")
NO_KERNEL_CALL = HONEST.replace("        k[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)\n        return out",
                                "        return torch.relu(x)")
DOWNCAST = HONEST.replace("k[(triton.cdiv(n, 256),)](x, out, n", "k[(triton.cdiv(n, 256),)](x.half(), out, n")
# row: (program, label); row 4 gets a run flagged no_triton_launch
ROWS = [(HONEST, 0.010), (program("relu", block=512), 0.020), (NO_KERNEL_CALL, 0.001),
        (program("relu", variant="no_kernel"), 0.002), (program("relu", block=1024), 0.005), (DOWNCAST, 0.008)]


def ids(*rows: int) -> list[str]:
    return [f"train/{i:06d}" for i in rows]


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    folder = tmp_path_factory.mktemp("board")
    pq.write_table(pa.table({"x": [x for x, _ in ROWS], "y": pa.array([y for _, y in ROWS])}), folder / "train.parquet")
    store = folder / "store"
    ingest([str(folder / "train.parquet")], store, progress=False, workers=1)
    runs = folder / "runs"
    launches = {"checked": True, "triton_launches": 1, "triton_ms": 0.009, "other_launches": 1, "other_ms": 0.001,
                "triton_share": 0.9, "top_kernels": [{"name": "k", "count": 1, "ms": 0.009, "triton": True}]}
    def sha(row: int) -> dict:  # so these results belong to this store only
        return {"program_sha256": hashlib.sha256(ROWS[row][0].encode()).hexdigest()}

    write_results(runs, [
        result(ids(0)[0], "ok", median_ms=0.1) | {"speedup": 2.0, "ref_timing": {"median_ms": 0.2},
                                                   "launches": launches} | sha(0),
        result(ids(1)[0], "ok", median_ms=0.3) | {"speedup": 1.0, "ref_timing": {"median_ms": 0.3}} | sha(1),
        result(ids(4)[0], "ok", median_ms=0.05) | {"flags": ["no_triton_launch", "state_loaded:2/2",
                                                                      "ref_launch_bound"]} | sha(4),
    ])
    clear_cache()
    old = os.environ.get("TLX_RUNS_DIR")
    os.environ["TLX_RUNS_DIR"] = str(runs)
    yield store
    clear_cache()
    if old is None:
        del os.environ["TLX_RUNS_DIR"]
    else:
        os.environ["TLX_RUNS_DIR"] = old


def key_of(store) -> str:
    return api.problems(store, settings_now())["problem_key"][0].as_py()


def test_static_flags_of_the_rows(board):
    flags = {r["id"]: r["static_flags"] for r in pq.read_table(board / "index.parquet").to_pylist()}
    assert flags[ids(2)[0]] == ["torch_compute_in_forward", "kernel_never_called"]
    assert flags[ids(5)[0]] == ["precision_downcast"] and flags[ids(0)[0]] == []


@pytest.mark.parametrize(("candidates", "expected"), [
    (Candidates(), ids(5, 0, 1)),  # no kernel (3), a static hack flag (2), a run's hack flag (4) left out
    (Candidates(with_flagged=True), ids(2, 4, 5, 0, 1)),
    (Candidates(with_no_triton=True), ids(3, 5, 0, 1)),
    (Candidates(True, True), ids(2, 3, 4, 5, 0, 1)),
])
def test_one_candidate_filter_everywhere(board, candidates, expected):
    key = key_of(board)
    assert api.fastest(board, settings_now(), key, c=candidates)["id"].to_pylist() == expected
    summary = api.problem_summary(board, settings_now(), key, candidates)
    assert summary["best_id"] == expected[0] and summary["ranked"] == len(expected)
    assert api.problems(board, settings_now(), c=candidates)["best_id"].to_pylist() == [expected[0]]
    assert api.problems(board, settings_now(), Filters(split="train"), c=candidates)["y_min"].to_pylist() == [
        dict(zip(ids(*range(6)), [y for _, y in ROWS], strict=True))[expected[0]]]
    exported = api.export(board, settings_now(), fmt="jsonl", fastest_correct=True, c=candidates).decode().splitlines()
    assert [json.loads(line)["id"] for line in exported] == [expected[0]]


def test_a_non_hack_flag_is_ranked_and_shown(board):
    row = next(r for r in api.fastest(board, settings_now(), key_of(board)).to_pylist() if r["id"] == ids(5)[0])
    assert row["flags"] == ["precision_downcast"] and "precision_downcast" not in HACK_FLAGS


def test_leaderboard_carries_the_runs_reference_and_triton_share(board):
    rows = {r["id"]: r for r in api.fastest(board, settings_now(), key_of(board)).to_pylist()}
    first, second = rows[ids(0)[0]], rows[ids(1)[0]]
    assert (first["speedup_vs_reference"], first["ref_median_ms"], first["triton_share"]) == (2.0, 0.2, 0.9)
    assert share_text(first["triton_share"], first["launches_checked"], first["run_id"]) == "90%"
    assert share_text(second["triton_share"], second["launches_checked"], second["run_id"]) == "not checked"
    assert share_text(None, None, None) == "—"
    note, ratio = reference_spread(api.fastest(board, settings_now(), key_of(board)))
    assert "2 different runs" in note and "0.2-0.3 ms" in note and ratio == pytest.approx(1.5)
    assert reference_spread(api.fastest(board, settings_now(), key_of(board), k=1)) is None


def test_flag_filter_and_counts(board):
    assert api.problem_latencies(board, settings_now(), key_of(board), Filters(flag="no_triton_launch"))["id"].to_pylist() == ids(4)
    counts = {r["flag"]: r for r in api.flag_counts(board, settings_now()).to_pylist()}
    assert {name: r["rows"] for name, r in counts.items()} == {
        "torch_compute_in_forward": 1, "kernel_never_called": 1, "precision_downcast": 1, "no_triton_launch": 1,
        "state_loaded": 1, "ref_launch_bound": 1}
    assert counts["ref_launch_bound"]["label"] == "reference: launch-bound" and not counts["ref_launch_bound"]["hack"]
    assert counts["no_triton_launch"]["hack"] and not counts["state_loaded"]["hack"]
    assert counts["state_loaded"]["meaning"] == next(c.meaning for c in CHECKS if c.name == "state_loaded")
    assert api.overview(board, settings_now()).totals["flagged_rows"] == 2


def test_level_filter(fixture_store):
    levels = {r["problem_id"] for r in api.problems(fixture_store, settings_now(), Filters(level=2)).to_pylist()}
    assert levels == {"2_5"}
    assert api.failures(fixture_store, settings_now(), Filters(level=3)).num_rows == 0
    with pytest.raises(TypeError):
        Filters(level="2")


def test_a_store_without_static_flags_opens_as_not_checked(fixture_store, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(fixture_store, old)
    index = pq.read_table(old / "index.parquet")
    pq.write_table(index.drop_columns(["static_flags"]), old / "index.parquet")
    clear_cache()
    totals = api.overview(old, settings_now()).totals
    assert totals["static_unchecked_rows"] == totals["rows"] and totals["flagged_rows"] == 0
    assert api.flag_counts(old, settings_now()).num_rows == 0
    key = api.problems(old, settings_now())["problem_key"][0].as_py()
    board = api.fastest(old, settings_now(), key).to_pylist()
    assert board and all(r["static_not_checked"] for r in board)
    assert row_flags_text([], True) == "not checked" and row_flags_text([], False) == "none"
    assert api.row(old, settings_now(), "train/000000").meta["static_flags"] is None


def test_new_run_flags_move_rows_out_of_the_problems_table(board, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("TLX_RUNS_DIR", str(runs))
    write_results(runs, [])
    assert api.problems(board, settings_now())["best_id"].to_pylist() == ids(4)  # row 4's flagged run is in the other folder
    write_results(runs, [result(ids(4)[0], "failed", "output_mismatch") | {"flags": ["output_reused"]}], name="w2.jsonl")
    assert api.problems(board, settings_now())["best_id"].to_pylist() == ids(5)
