"""Every question of `queries.api` on the fixture store, against answers worked out from the fixture rows."""

from __future__ import annotations

import io
import json
import math
import os
import re
import statistics

import pyarrow.parquet as pq
import pytest

from queries import api
from queries.db import connect
from queries.filters import Candidates, Filters
from queries.store import Store
from tests.fixtures import TEST, TRAIN
from tests.queries_helpers import fixture_rows, problem_keys, result, settings_now, write_results


def quantile_cont(values: list[float], q: float) -> float:
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (pos - lo) * (values[hi] - values[lo])


pytestmark = pytest.mark.usefixtures("empty_runs")

@pytest.fixture(scope="module")
def keys(fixture_store):
    return problem_keys(fixture_store)


def test_overview_totals_groups_quantiles(fixture_store):
    rows = fixture_rows()
    ys = [r["y"] for r in rows if r["y"] is not None]
    o = api.overview(fixture_store, settings_now())
    assert o.totals["rows"] == 15 and o.totals["ok_rows"] == 10 and o.totals["failed_rows"] == 5
    assert o.totals["problems"] == 4 and o.totals["train_rows"] == 10 and o.totals["test_rows"] == 5
    assert o.totals["static_error_rows"] == 3
    groups = {(g["split"], g["holdout_group"]): (g["rows"], g["failed_rows"]) for g in o.groups.to_pylist()}
    assert groups[("test", "full_holdout")] == (2, 1)
    assert groups[("test", "ninety_holdout")] == (2, 1)
    assert groups[("train", None)] == (2, 1)  # softmax: no test problem to map onto
    quantiles = dict(zip(o.y_quantiles["q"].to_pylist(), o.y_quantiles["y"].to_pylist(), strict=True))
    assert quantiles[0.5] == pytest.approx(quantile_cont(ys, 0.5))
    assert quantiles[0.0] == min(ys) and quantiles[1.0] == max(ys)
    assert dict(zip(o.kernels["n_kernels"].to_pylist(), o.kernels["rows"].to_pylist(), strict=True)) == {0: 1, 1: 14}
    test_only = api.overview(fixture_store, settings_now(), Filters(split="test", status="failed"))
    assert test_only.totals["rows"] == 2 and test_only.totals["ok_rows"] == 0


def test_overview_histogram_bins_every_label_once(fixture_store):
    ys = [r["y"] for r in fixture_rows() if r["y"] is not None]
    bins = api.overview(fixture_store, settings_now()).y_histogram.to_pylist()
    assert sum(b["rows"] for b in bins) == len(ys)
    per_decade = api.HISTOGRAM_BINS_PER_DECADE
    expected: dict[int, int] = {}
    for y in ys:  # by hand: the log10 bin each label falls in
        b = math.floor(math.log10(y) * per_decade)
        expected[b] = expected.get(b, 0) + 1
    got = {round(math.log10(b["bin_lo"]) * per_decade): b["rows"] for b in bins}
    assert got == expected
    for b in bins:
        assert b["bin_hi"] == pytest.approx(b["bin_lo"] * 10 ** (1 / per_decade))


def test_problems_table(fixture_store, keys):
    table = api.problems(fixture_store, settings_now())
    by_key = {r["problem_key"]: r for r in table.to_pylist()}
    assert set(by_key) == set(keys.values())
    relu = by_key[keys["relu"]]
    relu_ys = [r["y"] for r in fixture_rows() if r["problem"] == "relu" and r["y"] is not None]
    assert (relu["candidates"], relu["failures"], relu["distinct_candidates"]) == (7, 2, 5)
    assert relu["failure_rate"] == pytest.approx(2 / 7)
    assert relu["y_min"] == 0.007 and relu["y_max"] == 0.010
    assert relu["y_p10"] == pytest.approx(quantile_cont(relu_ys, 0.1))
    assert relu["y_median"] == pytest.approx(quantile_cont(relu_ys, 0.5))
    assert relu["y_p90"] == pytest.approx(quantile_cont(relu_ys, 0.9))
    assert relu["spread"] == pytest.approx(0.010 / 0.007)
    assert relu["best_id"] == "test/000000" and relu["problem_id"] == "1_19"
    assert relu["holdout_group"] == "full_holdout" and (relu["train_rows"], relu["test_rows"]) == (5, 2)
    assert by_key[keys["softmax"]]["problem_id"] is None
    assert table["problem_key"][0].as_py() == keys["relu"]  # most candidates first
    ascending = api.problems(fixture_store, settings_now(), sort="y_min", descending=False, limit=2)
    assert ascending["problem_key"].to_pylist() == [keys["relu"], keys["softmax"]]
    test_only = {r["problem_key"]: r for r in api.problems(fixture_store, settings_now(), Filters(split="test")).to_pylist()}
    assert set(test_only) == {keys["relu"], keys["matmul"], keys["gelu"]}
    assert (test_only[keys["relu"]]["candidates"], test_only[keys["relu"]]["failures"]) == (2, 1)
    with pytest.raises(ValueError, match="cannot sort"):
        api.problems(fixture_store, settings_now(), sort="y; DROP TABLE programs")


def test_problem_summary_latencies_fastest(fixture_store, keys):
    summary = api.problem_summary(fixture_store, settings_now(), keys["matmul"])
    assert summary["candidates"] == 4 and summary["best_id"] == "test/000002"
    assert api.problem_summary(fixture_store, settings_now(), "0" * 16) is None
    lat = api.problem_latencies(fixture_store, settings_now(), keys["relu"])
    assert lat["id"].to_pylist() == ["test/000000", "train/000001", "train/000003", "train/000002",
                                     "train/000000", "test/000001", "train/000004"]
    assert lat.column_names == ["id", "y", "ok", "split"]  # narrow: the 327k-row problem of 601k fits the memo
    assert api.problem_latencies(fixture_store, settings_now(), keys["relu"], Filters(split="test")).num_rows == 2
    fast = api.fastest(fixture_store, settings_now(), keys["relu"]).to_pylist()
    assert [(r["id"], r["copies"]) for r in fast] == [("test/000000", 1), ("train/000001", 3), ("train/000000", 1)]
    assert fast[1]["y_copies_max"] == 0.009
    assert fast[0]["speedup_vs_median"] == pytest.approx(0.0085 / 0.007)
    assert api.fastest(fixture_store, settings_now(), keys["relu"], k=1).num_rows == 1
    train_only = api.fastest(fixture_store, settings_now(), keys["relu"], f=Filters(split="train")).to_pylist()
    assert train_only[0]["id"] == "train/000001" and train_only[0]["speedup_vs_median"] == pytest.approx(0.00875 / 0.008)


def test_failures_static_and_examples(fixture_store):
    static = {(r["source"], r["error_type"]): (r["rows"], r["problems"])
              for r in api.failures(fixture_store, settings_now()).to_pylist()}
    assert static == {("static", "ok_static"): (3, 2), ("static", "syntax_error"): (1, 1),
                      ("static", "no_model_new"): (1, 1)}
    examples = api.failure_examples(fixture_store, settings_now())
    failed = sorted(r["id"] for r in fixture_rows() if r["y"] is None)
    assert examples["id"].to_pylist() == failed
    assert api.failure_examples(fixture_store, settings_now(), limit=2).num_rows == 2
    only = api.failure_examples(fixture_store, settings_now(), Filters(error_type="syntax_error", error_source="static"))
    assert only["id"].to_pylist() == ["train/000006"]


def test_row_detail_and_neighbours(fixture_store):
    detail = api.row(fixture_store, settings_now(), "train/000001")
    assert detail.meta["y"] == 0.008 and detail.meta["split"] == "train"
    assert (detail.prev_id, detail.next_id, detail.position, detail.problem_rows) == (
        "test/000000", "train/000003", 2, 7)
    assert detail.program == Store(fixture_store).program("train/000001")
    assert "class ModelNew" in detail.parsed.candidate and "class Model(" in detail.parsed.reference
    assert [k.name for k in detail.parsed.kernels] == ["relu_k"]
    last = api.row(fixture_store, settings_now(), "train/000004")
    assert last.next_id is None and last.prev_id == "test/000001" and last.position == 7
    assert api.row(fixture_store, settings_now(), "train/999999") is None


def test_overlap(fixture_store, keys):
    rows = {r["problem_key"]: r for r in api.overlap(fixture_store, settings_now()).to_pylist()}
    assert set(rows) == {keys["relu"], keys["matmul"]}
    assert (rows[keys["relu"]]["train_rows"], rows[keys["relu"]]["test_rows"]) == (5, 2)
    assert rows[keys["matmul"]]["holdout_group"] == "half_holdout"
    summary = {r["holdout_group"]: r for r in api.overlap_summary(fixture_store, settings_now()).to_pylist()}
    assert summary["ninety_holdout"]["overlapping_problems"] == 0
    assert summary["full_holdout"]["train_rows_of_overlapping"] == 5


def test_runs_joined_with_labels(fixture_store, keys, tmp_path, monkeypatch):
    runs_dir = tmp_path / "with-results"
    write_results(runs_dir, [
        result("train/000001", "failed", "runtime_error", finished_at="2025-01-01T00:00:00Z"),
        result("train/000001", "ok", median_ms=0.016, finished_at="2025-01-02T00:00:00Z"),
        result("train/000006", "failed", "compile_error"),
        result("test/000002", "ok", median_ms=0.9),
        {**result("x", "ok", median_ms=1.0), "row_id": None},
    ], garbage=True)
    assert api.runs(fixture_store, settings_now(tmp_path / "nothing-here")).num_rows == 0
    joined = api.runs(fixture_store, settings_now(runs_dir))
    assert joined.num_rows == 4
    ratios = {r["row_id"]: r["ratio"] for r in joined.to_pylist() if r["status"] == "ok"}
    assert ratios == {"train/000001": pytest.approx(2.0), "test/000002": pytest.approx(2.0)}
    per_problem = {r["problem_key"]: r for r in api.runs_by_problem(fixture_store, settings_now(runs_dir)).to_pylist()}
    assert per_problem[keys["relu"]]["rows_run"] == 1 and per_problem[keys["relu"]]["measured_ok"] == 1
    matmul = per_problem[keys["matmul"]]
    assert (matmul["rows_run"], matmul["measured_ok"], matmul["rows_with_ratio"]) == (2, 1, 1)
    monkeypatch.setenv("TLX_RUNS_DIR", str(runs_dir))
    measured = [r for r in api.failures(fixture_store, settings_now()).to_pylist() if r["source"] == "measured"]
    assert [(r["error_type"], r["rows"]) for r in measured] == [("compile_error", 1)]
    assert api.overview(fixture_store, settings_now(), Filters(error_type="compile_error")).totals["rows"] == 1
    assert api.overview(fixture_store, settings_now(), Filters(error_type="runtime_error", error_source="measured")).totals[
        "rows"] == 0  # superseded by a later ok result
    assert api.overview(fixture_store, settings_now(), Filters(error_source="measured")).totals["rows"] == 3
    assert api.overview(fixture_store, settings_now(), Filters(error_source="static")).totals["rows"] == 3


def test_runs_static_vs_measured_and_reproducibility(fixture_store, tmp_path):
    runs_dir = tmp_path / "repeats"
    write_results(runs_dir, [
        result("train/000000", "ok", median_ms=1.0, finished_at="2025-01-01T00:00:00Z"),
        result("train/000000", "ok", median_ms=3.0, finished_at="2025-01-02T00:00:00Z"),
        result("train/000001", "ok", median_ms=0.5),
        result("train/000006", "failed", "syntax_error"),  # static syntax_error too
        result("train/000009", "failed", "missing_symbol"),  # static no_model_new
    ])
    cross = {(r["static_error"], r["measured"]): r["rows"]
             for r in api.runs_static_vs_measured(fixture_store, settings_now(runs_dir)).to_pylist()}
    assert cross == {("ok_static", "ok"): 2, ("syntax_error", "syntax_error"): 1,
                     ("no_model_new", "missing_symbol"): 1}
    repeated = api.runs_reproducibility(fixture_store, settings_now(runs_dir)).to_pylist()
    assert [r["row_id"] for r in repeated] == ["train/000000"]  # the only row timed twice
    r = repeated[0]
    assert (r["runs"], r["median_ms_min"], r["median_ms_max"]) == (2, 1.0, 3.0)
    assert r["cv"] == pytest.approx(statistics.stdev([1.0, 3.0]) / 2.0)


def test_export_parquet_jsonl_fastest_and_code(fixture_store):
    table = pq.read_table(io.BytesIO(api.export(fixture_store, settings_now())))
    assert table.num_rows == len(TRAIN) + len(TEST) and "code_shard" not in table.column_names
    best = pq.read_table(io.BytesIO(api.export(fixture_store, settings_now(), fastest_correct=True, include_code=True)))
    assert sorted(best["id"].to_pylist()) == ["test/000000", "test/000002", "test/000003", "train/000008"]
    store = Store(fixture_store)
    assert all(x == store.program(i) for i, x in zip(best["id"].to_pylist(), best["x"].to_pylist(), strict=True))
    lines = api.export(fixture_store, settings_now(), Filters(split="test"), fmt="jsonl").decode().splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [p["id"] for p in parsed] == [f"test/{i:06d}" for i in range(5)]
    assert parsed[1]["y"] is None and parsed[0]["kernel_names"] == ["relu_k"] and parsed[0]["level"] == 1
    with pytest.raises(api.ExportError, match="unknown export format"):
        api.export(fixture_store, settings_now(), fmt="csv")


def test_connection_cache_notices_rebuilt_store(fixture_store):
    first = connect(fixture_store, settings_now())
    assert connect(fixture_store, settings_now()) is first
    meta = fixture_store / "meta.json"
    stat = meta.stat()
    os.utime(meta, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    try:
        assert connect(fixture_store, settings_now()) is not first
    finally:
        os.utime(meta, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_new_results_refresh_memoized_answers(fixture_store, tmp_path, monkeypatch):
    runs_dir = tmp_path / "growing"
    monkeypatch.setenv("TLX_RUNS_DIR", str(runs_dir))
    assert [r for r in api.failures(fixture_store, settings_now()).to_pylist() if r["source"] == "measured"] == []
    write_results(runs_dir, [result("train/000000", "failed", "timeout")], name="worker-2.jsonl")
    measured = [r for r in api.failures(fixture_store, settings_now()).to_pylist() if r["source"] == "measured"]
    assert [(r["error_type"], r["rows"]) for r in measured] == [("timeout", 1)]


def test_sessions_asking_the_same_question_at_once_run_it_once(fixture_store, tmp_path, monkeypatch):
    import threading
    import time

    db = connect(fixture_store, settings_now(tmp_path / "no-runs"))
    ran = []
    real_run = db.run

    def slow_run(*args, **kwargs):
        ran.append(args[0])
        time.sleep(0.3)  # long enough for every session to ask while the first one runs
        return real_run(*args, **kwargs)

    monkeypatch.setattr(db, "run", slow_run)
    answers = []
    sessions = [threading.Thread(target=lambda: answers.append(db.execute("failures", Filters(split="test").params(),
                                                                          memo=True)))
                for _ in range(4)]
    for session in sessions:
        session.start()
    for session in sessions:
        session.join(timeout=30)
    assert len(ran) == 1 and len(answers) == 4 and all(a.equals(answers[0]) for a in answers)


def test_failures_count_each_row_once_by_its_latest_cause(fixture_store, tmp_path):
    runs_dir = tmp_path / "causes"
    write_results(runs_dir, [
        result("train/000006", "failed", "compile_error"),  # static syntax_error, label failed
        result("train/000004", "ok", median_ms=1.0),  # label failed, the re-run passed
        result("train/000000", "failed", "output_mismatch"),  # label ok, the re-run failed
    ])
    db = connect(fixture_store, settings_now(runs_dir))
    counted = {(r["source"], r["error_type"]): r["rows"] for r in db.execute("failures", Filters().params())
               .to_pylist()}
    failed = {r["id"] for r in fixture_rows() if r["y"] is None} | {"train/000000"}
    assert sum(counted.values()) == len(failed)  # one bar segment per row, never static + measured
    assert counted[("measured", "compile_error")] == 1 and counted[("measured", "ok")] == 1
    assert counted[("measured", "output_mismatch")] == 1 and ("static", "syntax_error") not in counted
    measured_only = db.execute("failures", Filters(error_source="measured").params()).to_pylist()
    assert {r["source"] for r in measured_only} == {"measured"} and sum(r["rows"] for r in measured_only) == 3
    static_view = db.execute("failures", Filters(error_source="static").params()).to_pylist()
    assert {r["source"] for r in static_view} == {"static"}
    unmeasured = db.execute("unmeasured_failures", Filters().params())["id"].to_pylist()
    assert unmeasured == sorted(failed - {"train/000006", "train/000004", "train/000000"})


def test_bulk_selects_the_rows_the_failures_page_counts(fixture_store, tmp_path):
    """A store's shipped runs count for `runner bulk --error-type` as they do on the pages (issue 13)."""
    import argparse
    import shutil

    from runner.bulk.command import add_arguments, select_rows

    store = tmp_path / "store"
    shutil.copytree(fixture_store, store)
    write_results(store, [result("train/000001", "failed", "compile_error")], name="shipped.jsonl")
    runs_dir = tmp_path / "runs"
    write_results(runs_dir, [result("train/000002", "failed", "compile_error", finished_at="2025-01-01T00:00:00Z"),
                             result("train/000002", "ok", median_ms=1.0, finished_at="2025-01-01T00:00:00Z")])
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--error-type", "compile_error"])

    picked = [r[0] for r in select_rows(store, args, settings_now(runs_dir))]
    counted = connect(store, settings_now(runs_dir)).execute("failures", Filters(error_type="compile_error").params()).to_pylist()
    assert picked == ["train/000001"]  # train/000002: same time, the later line (ok) is its latest verdict
    assert sum(r["rows"] for r in counted if r["error_type"] == "compile_error") == len(picked)


def test_runs_belong_to_the_program_not_just_the_row_id(fixture_store, tmp_path):
    """Every store shares the runs folder: a run of `train/000001` of one store is not a run of another store's
    `train/000001` (issue 15 item 2)."""
    import hashlib

    from tests.ui_store import build_store

    other = build_store(tmp_path / "other")
    sha = hashlib.sha256(Store(fixture_store).program("train/000001").encode("utf-8")).hexdigest()
    runs_dir = tmp_path / "shared-runs"
    write_results(runs_dir, [result("train/000001", "failed", "compile_error") | {"program_sha256": sha}])
    assert api.runs(fixture_store, settings_now(runs_dir))["row_id"].to_pylist() == ["train/000001"]
    assert api.runs(other, settings_now(runs_dir)).num_rows == 0
    assert connect(other, settings_now(runs_dir)).execute("row_runs", {"row_id": "train/000001"}).num_rows == 0
    assert connect(other, settings_now(runs_dir)).execute("failures", Filters(error_source="measured").params()).num_rows == 0


def test_leaderboard_triton_only_with_measured_verdicts(fixture_store, tmp_path):
    key = api.row(fixture_store, settings_now(), "train/000007").meta["problem_key"]  # its only label without a Triton kernel
    runs_dir = tmp_path / "board"
    write_results(runs_dir, [result("train/000007", "ok", median_ms=2.0) | {"speedup": 0.53}])
    db = connect(fixture_store, settings_now(runs_dir))
    params = {**Filters(problem_key=key).params(), "k": 20, "fold_near": False}
    everything = db.execute("fastest", {**params, **Candidates(with_no_triton=True).params()}).to_pylist()
    triton = db.execute("fastest", {**params, **Candidates().params()}).to_pylist()
    assert "train/000007" in [r["id"] for r in everything] and "train/000007" not in [r["id"] for r in triton]
    assert all(r["n_kernels"] > 0 for r in triton) and len(triton) == len(everything) - 1
    shown = next(r for r in everything if r["id"] == "train/000007")
    assert (shown["verified"], shown["speedup_vs_reference"], shown["measured_ms"]) == ("correct", 0.53, 2.0)
    assert all(r["verified"] is None for r in everything if r["id"] != "train/000007")


def test_agreement_with_the_labels_per_profile(fixture_store, tmp_path):
    import subprocess
    import sys

    runs_dir = tmp_path / "agree"
    loose, strict = {"method": {"profile": "kernelbench"}}, {"method": {"profile": "kernelbench-strict"}}
    write_results(runs_dir, [
        result("train/000000", "ok", median_ms=0.02) | loose,  # label 0.01: agrees, ratio 2
        result("train/000001", "ok", median_ms=0.016) | loose,  # label 0.008: agrees, ratio 2
        result("train/000004", "failed", "output_mismatch") | loose,  # label null: agrees
        result("train/000000", "failed", "output_mismatch") | strict,  # label present: disagrees
        result("train/000004", "ok", median_ms=1.0) | strict,  # label null: disagrees
        result("train/000001", "ok", median_ms=0.016),  # no profile recorded
    ])
    rows = {r["profile"]: r for r in api.agreement(fixture_store, settings_now(runs_dir)).to_pylist()}
    assert set(rows) == {"kernelbench", "kernelbench-strict", "(not recorded)"}
    kb, st = rows["kernelbench"], rows["kernelbench-strict"]
    assert (kb["rows"], kb["label_ok_measured_ok"], kb["label_null_measured_failed"], kb["agreement"]) == (3, 2, 1, 1.0)
    assert kb["ratio_median"] == pytest.approx(2.0) and kb["rows_with_ratio"] == 2
    assert (st["label_ok_measured_failed"], st["label_null_measured_ok"], st["agreement"]) == (1, 1, 0.0)
    only = api.agreement(fixture_store, settings_now(runs_dir), profile="kernelbench-strict")
    assert only["profile"].to_pylist() == ["kernelbench-strict"]
    cli = subprocess.run([sys.executable, "-m", "queries", "agreement", "--store", str(fixture_store),
                          "--runs-dir", str(runs_dir), "--profile", "kernelbench"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert "kernelbench" in cli.stdout and "100.0%" in cli.stdout and "strict" not in cli.stdout


def test_problem_titles_are_unique_per_key(tmp_path):
    import pyarrow as pa

    from queries.ingest import ingest
    from tests.fixtures import render

    programs = [render("Elementwise op.", "torch.relu(x)", 64, "tl.maximum(x, 0.0)"),
                render("Elementwise op.", "x * 2", 64, "x * 2.0"),
                render("Elementwise op.", "x * 2", 64, "x * 2.0", block=128)]
    source = tmp_path / "src" / "train.parquet"
    source.parent.mkdir()
    pq.write_table(pa.table({"x": programs, "y": pa.array([1.0, 2.0, 3.0], pa.float64())}), source)
    ingest([str(source)], tmp_path / "store", progress=False, workers=1)
    problems = api.problems(tmp_path / "store", settings_now()).to_pylist()
    titles = [p["title"] for p in problems]
    assert len(problems) == 2 and len(set(titles)) == 2
    assert all(t.startswith("Elementwise op. · 64×64 · ") for t in titles)  # shared name + key prefix
    assert all(p["title"].endswith(p["problem_key"][:6]) for p in problems)


def test_the_kernel_page_takes_the_one_latest_verdict(fixture_store, tmp_path, monkeypatch):
    """`recency` (setup_runs.sql) orders every "newest first": the row detail's latest run, its history, the
    row's `measured_error` agree on which result is the latest (issue 23)."""
    runs_dir = tmp_path / "latest"
    at = "2025-03-01T00:00:00Z"
    write_results(runs_dir, [{**result("train/000001", "failed", "compile_error", finished_at=at), "id": "a1"},
                             {**result("train/000001", "ok", median_ms=1.0, finished_at=at), "id": "a2"}],
                  name="a.jsonl")
    write_results(runs_dir, [{**result("train/000001", "failed", "timeout", finished_at=at), "id": "b1"},
                             {**result("train/000001", "ok", median_ms=2.0), "id": "undated"} | {"finished_at": None}],
                  name="b.jsonl")
    monkeypatch.setenv("TLX_RUNS_DIR", str(runs_dir))
    detail = api.row(fixture_store, settings_now(), "train/000001")
    assert detail.latest_run["result_id"] == "b1"  # same time: the later file name; no time: oldest of all
    assert detail.runs["result_id"].to_pylist() == ["b1", "a2", "a1", "undated"]
    db = connect(fixture_store, settings_now(runs_dir))
    assert db.run("SELECT measured_error FROM programs WHERE id = 'train/000001'").to_pylist() == [
        {"measured_error": "timeout"}]
    assert api.row(fixture_store, settings_now(), "train/000002").latest_run is None


def test_the_filter_is_passed_to_sql_once():
    """Every question filters through `filtered($filter)` (sql/setup_filtered.sql), the one bound STRUCT of
    `Filters.params`; none spells the filter's fields (the 8-argument call was pasted into 21 files, issue 44)."""
    from queries.sql_files import SQL_DIR

    calls = {}
    for path in sorted(SQL_DIR.glob("*.sql")):
        if path.name != "setup_filtered.sql":
            calls.update({f"{path.name}: {c}": c for c in re.findall(r"(?:filtered|problem_table)\(([^)]*)\)", path.read_text())})
    assert len(calls) >= 21
    assert {call for call in calls.values() if not call.startswith(("$filter", "NULL"))} == set()
    assert Filters(split="train", level=2).params() == {"filter": {
        "split": "train", "holdout": None, "problem": None, "status": None, "error": None, "source": None, "level": 2,
        "flag": None, "triage": None, "triage_error": None}}


def test_one_version_keys_every_cache_of_a_store(fixture_store, tmp_path):
    """meta.json is typed (`StoreMeta`, what it holds besides kept as written), and every cache of a store keys on
    `store_version`, which the syntax check's rewrite moves too (the explorer's cached answers used to key on
    `built_at`, which stage 2 leaves as it was: static errors it marks stayed unseen for a minute)."""
    import shutil

    from queries.store import StoreMeta, read_meta, store_version, write_meta

    store = tmp_path / "store"
    shutil.copytree(fixture_store, store)
    meta = read_meta(store)
    assert isinstance(meta, StoreMeta) and meta.rows_indexed == 15 - meta.rows_rejected
    assert StoreMeta.from_dict(meta.to_dict()) == meta and "sources" in meta.rest
    before = store_version(store)
    os.utime(store / "meta.json", ns=(0, before - 1_000_000))  # an older clock tick, as a rebuild's write makes
    older = store_version(store)
    write_meta(store, meta.with_syntax_check({"done": True, "rows": 15}))  # what stage 2 does
    assert store_version(store) != older and read_meta(store).built_at == meta.built_at
    assert read_meta(store).syntax_check == {"done": True, "rows": 15}
