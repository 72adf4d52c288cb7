"""CPU triage results in the explorer's queries (issue 41): the reader, the `triage` table, the cause precedence
(measured > triaged > static, each failed row counted once), the triage filters and `runner bulk`'s."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil

import pytest

from common.triage_log import MESSAGE_CHARS, flat_triage, read_triage
from queries import api
from queries.db import connect
from queries.filters import Filters
from queries.store import Store
from tests.queries_helpers import fixture_rows, result, settings_now, write_results
from tests.triage_helpers import triage, write_triage

pytestmark = pytest.mark.usefixtures("empty_runs")

FAILED = {r["id"] for r in fixture_rows() if r["y"] is None}  # train/4, 6, 9 and test/1, 4
TRIAGED_ON = "triaged on CPU (torch 2.13.0, sm_90)"


@pytest.fixture
def triaged(fixture_store, tmp_path):
    """A copy of the fixture store with published triage, a runs folder with a GPU run and the runner's triage."""
    store = tmp_path / "store"
    shutil.copytree(fixture_store, store)
    sha = hashlib.sha256(Store(store).program("train/000009").encode("utf-8")).hexdigest()
    write_triage(store, [
        triage("train/000006", "failed", "import_error", module="flash_attn"),  # + GPU run + static syntax_error
        triage("train/000004", "failed", "compile_error", kernel="relu_k"),  # triage only (static: ok_static)
        triage("train/000009", "not_triaged", sha=sha),  # no answer: the static no_model_new stands
        triage("test/000004", "failed", "import_error", triaged_at="2025-01-01T00:00:00Z"),  # older than runs'
    ], name="triage-cpu.jsonl", torn=True)
    runs_dir = tmp_path / "runs"
    write_results(runs_dir, [result("train/000006", "failed", "compile_error")])
    write_triage(runs_dir, [
        triage("test/000001", "passed", torch="2.12.0"),
        triage("test/000004", "failed", "shape_mismatch", triaged_at="2025-03-01T00:00:00Z"),
        triage("train/000000", "failed", "compile_error", kernel="relu_k"),  # the label is ok: not a failed row
        triage("train/000001", "failed", "compile_error", sha="0" * 64),  # another store's program: not this row
    ])
    return store, runs_dir


def test_reader_skips_torn_lines_and_bounds_what_it_keeps(triaged, tmp_path):
    store, runs_dir = triaged
    assert len(list(read_triage(store, runs_dir))) == 8  # the torn line is skipped, both roots read
    write_triage(tmp_path / "odd", [
        triage("train/000001", "failed", "compile_error", message="x" * (MESSAGE_CHARS + 10)),
        triage("train/000002", "exploded", "compile_error") | {"phases_s": {"import": "slow"}, "cache": None},
        triage("train/000003", "passed", "compile_error"),
    ])
    long, odd, passed = flat_triage(tmp_path / "odd")
    assert long["message"].startswith("x" * MESSAGE_CHARS) and "10 more characters cut" in long["message"]
    assert long["kernel"] is None and long["torch"] == "2.13.0" and long["compile_s"] == 0.4
    assert odd["triage_status"] is None and odd["import_s"] is None and odd["cache_hits"] is None
    assert passed["error_type"] is None  # a passed triage names no error type


def test_each_failed_row_counts_once_by_its_most_trusted_cause(triaged):
    store, runs_dir = triaged
    counted = {(r["source"], r["basis"], r["error_type"]): r["rows"]
               for r in connect(store, settings_now(runs_dir)).execute("failures", Filters().params()).to_pylist()}
    assert sum(counted.values()) == len(FAILED)  # once each: never measured + triaged + static
    assert counted == {
        ("measured", "measured on H200", "compile_error"): 1,  # train/6: not its triage, not its syntax error
        ("triaged", TRIAGED_ON, "compile_error"): 1,  # train/4
        ("triaged", TRIAGED_ON, "shape_mismatch"): 1,  # test/4: the newest triage, from the runs folder
        ("triaged", "triaged on CPU (torch 2.12.0, sm_90)", "passed"): 1,  # test/1: the rest needs a GPU
        ("static", "static", "no_model_new"): 1,  # train/9: not_triaged gives no cause
    }
    assert not any("failed on" in basis for _, basis, _ in counted)


def test_error_source_filters_count_every_row_by_that_source(triaged):
    store, runs_dir = triaged
    db = connect(store, settings_now(runs_dir))
    by_triage = {(r["source"], r["error_type"]): r["rows"]
                 for r in db.execute("failures", Filters(error_source="triaged").params()).to_pylist()}
    assert by_triage == {("triaged", "import_error"): 1, ("triaged", "compile_error"): 1,
                         ("triaged", "shape_mismatch"): 1, ("triaged", "passed"): 1, ("triaged", "not_triaged"): 1}
    static = db.execute("failures", Filters(error_source="static").params()).to_pylist()
    assert {(r["basis"], r["error_type"]) for r in static} == {("static", "syntax_error"), ("static", "no_model_new")}


def test_triage_filters_pick_rows_by_latest_triage(triaged):
    store, runs_dir = triaged
    db = connect(store, settings_now(runs_dir))

    def ids(f: Filters) -> list[str]:
        return db.execute("filtered_ids", f.params())["id"].to_pylist()

    assert ids(Filters(triage_status="passed")) == ["test/000001"]
    assert ids(Filters(triage_error="compile_error")) == ["train/000000", "train/000004"]
    assert ids(Filters(triage_status="failed", status="failed")) == ["test/000004", "train/000004",
                                                                     "train/000006"]
    untriaged = ids(Filters(triage_status="untriaged"))
    assert "train/000001" in untriaged and "test/000001" not in untriaged and len(untriaged) == 15 - 6
    assert ids(Filters(error_type="shape_mismatch")) == ["test/000004"]  # error_type matches triage too
    assert ids(Filters(error_type="passed", status="failed")) == ["test/000001"]  # the cause "passed CPU triage"
    assert ids(Filters(error_type="import_error", error_source="triaged")) == ["train/000006"]
    with pytest.raises(ValueError, match="triage_status"):
        Filters(triage_status="maybe")
    with pytest.raises(ValueError, match="triage_error"):
        Filters(triage_error="ok")


def test_examples_and_row_detail_show_the_triage_as_triage(triaged):
    store, runs_dir = triaged
    connect(store, settings_now(runs_dir))  # the runs folder this test reads (api.* connect with settings' runs dir)
    examples = {r["id"]: r for r in connect(store, settings_now(runs_dir)).execute(
        "failure_examples", {**Filters().params(), "limit": 50}).to_pylist()}
    assert examples["train/000004"]["cause"] == "compile_error" and examples["train/000004"]["basis"] == TRIAGED_ON
    assert examples["train/000004"]["triage_message"] == "compile_error: triaged boom"
    assert examples["train/000006"]["cause"] == "compile_error"
    assert examples["train/000006"]["basis"] == "measured on H200"
    latest = connect(store, settings_now(runs_dir)).execute("row_latest_triage", {"row_id": "test/000004"}).to_pylist()
    assert [(t["triage_status"], t["error_type"], t["basis"]) for t in latest] == [
        ("failed", "shape_mismatch", TRIAGED_ON)]


def test_new_triage_files_are_noticed(triaged):
    store, runs_dir = triaged
    db = connect(store, settings_now(runs_dir))
    before = db.execute("filtered_ids", Filters(triage_status="passed").params())["id"].to_pylist()
    write_triage(runs_dir, [triage("train/000009", "passed", triaged_at="2025-04-01T00:00:00Z")], name="later.jsonl")
    after = connect(store, settings_now(runs_dir)).execute("filtered_ids", Filters(triage_status="passed").params())
    assert before == ["test/000001"] and after["id"].to_pylist() == ["test/000001", "train/000009"]


def test_bulk_reruns_only_the_failed_rows_that_triage_passed(triaged):
    from runner.bulk.command import add_arguments, select_rows

    store, runs_dir = triaged
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    picked = [r[0] for r in select_rows(store, parser.parse_args(["--status", "failed", "--triage-status", "passed"]),
                                        settings_now(runs_dir))]
    assert picked == ["test/000001"]
    by_type = [r[0] for r in select_rows(store, parser.parse_args(["--triage-error", "compile_error"]), settings_now(runs_dir))]
    assert by_type == ["train/000000", "train/000004"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--triage-status", "maybe"])
    by_source = select_rows(store, parser.parse_args(["--error-source", "triaged", "--error-type", "import_error"]),
                            settings_now(runs_dir))
    assert [r[0] for r in by_source] == ["train/000006"]  # its triage's type, not its run's (compile_error)
    from queries.filters import ERROR_SOURCES
    from runner.bulk.command import ERROR_SOURCES as BULK_SOURCES

    assert BULK_SOURCES == ERROR_SOURCES  # bulk parses without the queries packages: the same choices


def test_ingest_copies_published_triage_into_the_store(tmp_path):
    from queries.ingest import ingest
    from tests.fixtures import write_fixture_shard

    paths = write_fixture_shard(tmp_path / "source")
    write_triage(tmp_path, [triage("train/000004", "failed", "compile_error")], name="unused.jsonl")
    published = tmp_path / "source" / "triage-cpu.jsonl"
    (tmp_path / "triage" / "unused.jsonl").rename(published)
    store = tmp_path / "store"
    ingest([str(p) for p in paths], store, progress=False, workers=1, code_rows_per_group=4)
    assert (store / "triage" / "triage-cpu.jsonl").read_bytes() == published.read_bytes()
    assert Store(store).meta.rest["shipped_triage"] == [str(published)]
    assert api.row(store, settings_now(), "train/000004").latest_triage["error_type"] == "compile_error"


def test_a_growing_file_is_read_once_a_line_and_a_replaced_one_in_full(tmp_path):
    """A triage run appends while the explorer is open: each refresh parses only the new lines (a torn last line
    waits for its end), and what it reads equals a read of the whole file; a file replaced or cut short is read
    again from the start."""
    from common.triage_log import read_triage_tail
    from queries.triage import TriageReader

    path = write_triage(tmp_path, [triage("train/000001", "passed"), triage("train/000002", "passed")])
    reader = TriageReader(tmp_path)
    first, full = reader.read()
    assert full and first["row_id"].to_pylist() == ["train/000001", "train/000002"]
    line = json.dumps(triage("train/000003", "failed", "compile_error"))
    with open(path, "a") as fh:
        fh.write(line[:20])  # a writer mid-line
    assert reader.read()[0].num_rows == 0
    with open(path, "a") as fh:
        fh.write(line[20:] + "\n")
    added, full = reader.read()
    assert not full and added["row_id"].to_pylist() == ["train/000003"] and added["line"].to_pylist() == [3]
    assert [(r.file, r.line) for r in read_triage(tmp_path)] == [(path.name, 1), (path.name, 2), (path.name, 3)]
    by_hand = write_triage(tmp_path, [triage("test/000001", "passed")], name="hand.jsonl")
    by_hand.write_text(by_hand.read_text().rstrip("\n"))  # no final newline: still a line
    assert read_triage_tail(by_hand).results[0].result["row_id"] == "test/000001"
    added, full = reader.read()
    assert not full and added["row_id"].to_pylist() == ["test/000001"]
    write_triage(tmp_path, [triage("train/000009", "passed")])  # the first file replaced
    again, full = reader.read()
    assert full and sorted(again["row_id"].to_pylist()) == ["test/000001", "train/000009"]


def test_a_connection_sees_appended_and_replaced_triage(triaged):
    store, runs_dir = triaged
    db = connect(store, settings_now(runs_dir))
    path = runs_dir / "triage" / "triage-worker-1.jsonl"
    with open(path, "a") as fh:
        fh.write(json.dumps(triage("train/000009", "failed", "init_error", triaged_at="2025-05-01T00:00:00Z")) + "\n")
    ids = connect(store, settings_now(runs_dir)).execute("filtered_ids", Filters(triage_error="init_error").params())
    assert ids["id"].to_pylist() == ["train/000009"]
    path.write_text(json.dumps(triage("train/000004", "passed", triaged_at="2025-05-01T00:00:00Z")) + "\n")
    db = connect(store, settings_now(runs_dir))
    assert db.execute("filtered_ids", Filters(triage_error="init_error").params()).num_rows == 0
    assert db.execute("filtered_ids", Filters(triage_status="passed").params())["id"].to_pylist() == ["train/000004"]
