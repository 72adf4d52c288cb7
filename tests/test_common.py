"""The shared floor (`common/`): the row id's one form, the program hash, the results log's writer and
flattening, and the one reader of the `TLX_*` variables."""

from __future__ import annotations

import hashlib
import json

import duckdb
import pytest

from common.hardware import CPU_LABEL, hardware_label, result_device
from common.program_hash import is_utf8, program_sha256
from common.results_log import RUN_COLUMNS, ResultsLog, flat_results, flatten_result, read_results
from common.row_id import ROW_ID_FORMAT, BadRowId, check_row_id, format_row_id, parse_row_id
from common.settings import RunnerConfig, load_settings


@pytest.mark.parametrize("row", [0, 123, 999_999, 1_000_000, 12_345_678])
def test_row_ids_round_trip_and_sql_writes_them_alike(row):
    row_id = format_row_id("train", row)
    assert parse_row_id(row_id) == ("train", row) and check_row_id(row_id) == row_id
    sql = duckdb.sql("SELECT printf($f, $s, $r) AS id", params={"f": ROW_ID_FORMAT, "s": "train", "r": row})
    assert sql.fetchall() == [(row_id,)]
    assert len(row_id.partition("/")[2]) == max(6, len(str(row)))


@pytest.mark.parametrize("bad", ["train/123", "train/0000123", "train/١٢٣٤٥٦", "train/" + "9" * 19, "train/",
                                 "/000001", "000001", None, 7, "train/000001 "])
def test_row_ids_not_in_canonical_form_are_refused(bad):
    with pytest.raises(BadRowId, match="bad row id"):
        parse_row_id(bad)


def test_the_service_accepts_only_the_dataset_splits_but_the_store_reads_any():
    assert parse_row_id("valid/000001") == ("valid", 1)
    with pytest.raises(BadRowId, match="train or test"):
        check_row_id("valid/000001")
    assert isinstance(BadRowId("x"), ValueError)


def test_program_hash_is_utf8_sha256_and_never_raises():
    text = "import torch\n# ünïcode ✓\n"
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert program_sha256(text) == program_sha256(text.encode()) == program_sha256(memoryview(text.encode())) == expected
    assert len(program_sha256("\ud800")) == 64 and program_sha256("\ud800") != program_sha256("\udfff")
    assert is_utf8(text) and not is_utf8("x\ud800")


def test_hardware_label():
    assert result_device("cuda") == "cuda" and result_device("cpu") == CPU_LABEL == "cpu-interpreter"
    assert hardware_label({"device": "cuda", "system": {"gpu": "H200"}}) == "H200"
    assert hardware_label({"device": CPU_LABEL}) == CPU_LABEL


def test_results_log_writes_dicts_and_reads_back_flat_rows(tmp_path):
    log = ResultsLog(tmp_path, "w")
    result = {"id": "r", "row_id": "train/000001", "status": "ok", "timing": {"median_ms": 1.5, "n": 10},
              "flags": {"launch_bound": True, "other": False}, "method": {"profile": "kernelbench", "atol": 0.01},
              "system": {"gpu": "H200"}, "trials": True, "traceback": "\n".join(map(str, range(40)))}
    log.append(result)
    with open(log.path, "a") as f:
        f.write('{"torn": \n[1]\n')
    assert list(read_results(tmp_path)) == [result]
    (row,) = flat_results(tmp_path)
    assert list(row) == [name for name, _ in RUN_COLUMNS]
    assert (row["median_ms"], row["timing_n"], row["flags"], row["profile"], row["gpu"]) == (
        1.5, 10, ["launch_bound"], "kernelbench", "H200")
    assert row["trials"] is None  # a bool is not a count
    assert row["traceback"].startswith("… 10 earlier lines cut …") and row["results_file"] == "w.jsonl"
    assert json.loads(row["method"]) == result["method"]
    assert flatten_result({}, "f", 1)["flags"] == []


def test_one_reader_of_the_tlx_variables():
    env = {"TLX_RUNNER_URL": "http://gpu:9000/", "TLX_RUNNER_TOKEN": " t ", "TLX_RUNNER_JOBS_PER_GPU": "3",
           "TLX_RUNNER_PREWARM": "off", "TLX_STORE": "/s"}
    settings, runner = load_settings(env), RunnerConfig.from_env(env)
    assert (settings.runner_url, settings.runner_token) == (runner.url, runner.token) == ("http://gpu:9000", "t")
    assert runner.jobs_per_gpu == 3 and runner.prewarm is False and not settings.store_is_sample
    assert settings.runner == runner  # one read gives the process both parts, passed down from its entry
    placement = settings.job_placement()  # what a sandboxed job gets of them, through its options
    assert placement["prewarm"] is False and "/s" in placement["hidden_roots"]
